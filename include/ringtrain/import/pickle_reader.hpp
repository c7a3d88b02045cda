#pragma once
// A safe reader of Python pickles that hold plain data and numpy arrays, such as the batch files
// of the CIFAR-10 python distribution (written by Python 2's cPickle, protocol 2). A stack
// machine for the opcodes Python 2 (protocol 2) and Python 3 (protocols 2 to 4) write for
// dicts, lists, tuples, integers, booleans, None, strings, bytes and numpy arrays. Nothing is
// ever executed: a global is looked up in an allowlist (numpy's array reconstruction,
// numpy.ndarray, numpy.dtype, _codecs.encode, bytes) and applied here, by what it means; any
// other global or opcode is refused, naming it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ringtrain {

enum class PickleKind {
  none,
  boolean,
  integer,
  bytes,
  text,
  list,
  tuple,
  dict,
  global,
  array,
  dtype
};

// One object of a pickle. Containers refer to their elements by index into Pickle::values, so
// an object pickled once and referred to twice (the memo) is one value.
struct PickleValue {
  PickleKind kind = PickleKind::none;
  int64_t integer = 0;  // boolean (0 or 1), integer
  // bytes; text (UTF-8); global ("module.name"); dtype (its type code, "u1"); array (its data)
  std::string bytes;
  std::vector<int64_t> items;  // list, tuple: the elements; dict: key, value, key, value, ...
  std::vector<int64_t> shape;  // array
  std::string dtype;           // array: byte order and type code ("|u1", "<i8"); dtype: the order
  bool fortran_order = false;  // array
  bool built = false;          // array, dtype: its state was set (BUILD)
};

struct Pickle {
  std::vector<PickleValue> values;  // every object made, in order
  int64_t root = -1;                // the object the pickle holds

  const PickleValue& operator[](int64_t index) const { return values[static_cast<size_t>(index)]; }
  const PickleValue& top() const { return (*this)[root]; }
  // The value under a bytes or text key of `dict`, or nullptr.
  const PickleValue* find(const PickleValue& dict, const std::string& key) const;
};

// Reads one pickle from `data`. Errors start with "WHAT: pickle: " (`what` names the input,
// e.g. the archive and member) and name the opcode and its byte offset, or the global refused.
Pickle read_pickle(const uint8_t* data, size_t size, const std::string& what);

// "a dict", "a list", ...: for messages about what a pickle holds.
std::string pickle_kind_name(PickleKind kind);

}  // namespace ringtrain
