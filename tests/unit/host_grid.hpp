#pragma once
// A host emulator of the CUDA backend's grid-stride launch, for the kernel bodies of
// ringtrain/backend/kernels/: every thread of every block walks its indices in turn, with the
// launcher's own geometry (device_grid) or a small one (kSmallGrid) that makes each thread take
// several strides and leaves the last block partly idle. It counts the visits and throws when an
// index below n is missed or visited twice. HostBf16 and HostF16 stand in for the device's
// 16-bit types, converted as the device converts them (round to nearest even).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ringtrain/backend/kernels/element.hpp"
#include "ringtrain/backend/kernels/grid.hpp"
#include "ringtrain/core/half.hpp"

namespace ringtrain::test {

struct HostBf16 {
  uint16_t bits;
};
struct HostF16 {
  uint16_t bits;
};

}  // namespace ringtrain::test

namespace ringtrain::kernels {

template <>
struct Element<test::HostBf16> {
  static float load(test::HostBf16 v) { return bf16_to_float(v.bits); }
  static test::HostBf16 store(float v) { return {float_to_bf16(v)}; }
};

template <>
struct Element<test::HostF16> {
  static float load(test::HostF16 v) { return f16_to_float(v.bits); }
  static test::HostF16 store(float v) { return {float_to_f16(v)}; }
};

}  // namespace ringtrain::kernels

namespace ringtrain::test {

struct Grid {
  int64_t blocks;
  int64_t threads;
};

inline Grid device_grid(int64_t n) {
  return {kernels::blocks_for(n), kernels::kThreads};
}

constexpr Grid kSmallGrid{3, 32};

// The grid of each launch of an op that launches several bodies, from its number of indices:
// the launcher's own, and fixed ones that walk the indices in other orders.
using GridOf = Grid (*)(int64_t);
inline Grid launcher_grid(int64_t n) {
  return device_grid(n);
}
inline Grid small_grid(int64_t) {
  return kSmallGrid;
}
inline Grid one_thread(int64_t) {
  return {1, 1};
}
inline Grid odd_grid(int64_t) {
  return {7, 33};
}

template <class Body>
void emulate_grid_stride(const Body& body, int64_t n, Grid grid) {
  std::vector<uint8_t> visits(static_cast<std::size_t>(n), 0);
  for (int64_t block = 0; block < grid.blocks; ++block) {
    for (int64_t thread = 0; thread < grid.threads; ++thread) {
      const kernels::GridStride g = kernels::grid_stride(block, thread, grid.threads, grid.blocks);
      for (int64_t i = g.first; i < n; i += g.stride) {
        ++visits[static_cast<std::size_t>(i)];
        body(i);
      }
    }
  }
  for (int64_t i = 0; i < n; ++i)
    if (visits[static_cast<std::size_t>(i)] != 1)
      throw std::logic_error("grid-stride emulation visited index " + std::to_string(i) + " " +
                             std::to_string(visits[static_cast<std::size_t>(i)]) + " times");
}

// The host emulator of the CUDA backend's launch_then_finish: first over [0, n) on `grid`,
// then each step in turn, walked by one block of grid.threads threads.
template <class First, class... Bodies>
void emulate_then_finish(const First& first, int64_t n, Grid grid,
                         const kernels::FinishStep<Bodies>&... steps) {
  emulate_grid_stride(first, n, grid);
  (emulate_grid_stride(steps.body, steps.n, Grid{1, grid.threads}), ...);
}

// T values of `values`, converted as the device converts them.
template <class T>
std::vector<T> to_elements(const std::vector<float>& values) {
  std::vector<T> out;
  out.reserve(values.size());
  for (float v : values) out.push_back(kernels::from_float<T>(v));
  return out;
}

template <class T>
std::vector<float> to_floats(const std::vector<T>& elements) {
  std::vector<float> out;
  out.reserve(elements.size());
  for (const T& e : elements) out.push_back(kernels::to_float(e));
  return out;
}

}  // namespace ringtrain::test
