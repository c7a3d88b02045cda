#pragma once
// Values with consecutive ids, kept from the oldest not yet released: the marks of the device
// clocks (Device::mark), which a profiler reads steps after it made them.
#include <cstdint>
#include <deque>

#include "ringtrain/core/error.hpp"

namespace ringtrain {

template <class T>
class IdQueue {
 public:
  // Keeps value under the next id and returns the id (0 first).
  int64_t push(T value) {
    values_.push_back(value);
    return first_ + static_cast<int64_t>(values_.size()) - 1;
  }
  // The value of a kept id; `what` names the caller in the error for any other.
  const T& at(int64_t id, const char* what) const {
    const int64_t end = first_ + static_cast<int64_t>(values_.size());
    RT_CHECK(id >= first_ && id < end, what, ": mark ", id, " is not kept (marks ", first_, " to ",
             end - 1, " are)");
    return values_[static_cast<size_t>(id - first_)];
  }
  // Drops the values of the ids before `id`, oldest first, handing each to recycle.
  template <class Recycle>
  void release_before(int64_t id, Recycle&& recycle) {
    while (!values_.empty() && first_ < id) {
      recycle(values_.front());
      values_.pop_front();
      ++first_;
    }
  }
  const std::deque<T>& values() const { return values_; }

 private:
  std::deque<T> values_;
  int64_t first_ = 0;  // the id of values_.front()
};

}  // namespace ringtrain
