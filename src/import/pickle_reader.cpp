#include "ringtrain/import/pickle_reader.hpp"

#include <cstdio>
#include <unordered_map>

#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

// More objects than this is no dataset file this reader is for (a CIFAR-10 batch has ~20 000, a
// CIFAR-100 one ~150 000). It bounds the memo, the stack and the references containers hold too.
constexpr size_t kMaxValues = size_t{1} << 20;

const char* const kAllowed =
    "numpy.core.multiarray._reconstruct, numpy.ndarray, numpy.dtype, _codecs.encode, bytes";

bool is_reconstruct(const std::string& name) {
  return name == "numpy.core.multiarray._reconstruct" ||
         name == "numpy._core.multiarray._reconstruct";
}

bool allowed_global(const std::string& name) {
  return is_reconstruct(name) || name == "numpy.ndarray" || name == "numpy.dtype" ||
         name == "_codecs.encode" || name == "__builtin__.bytes" || name == "builtins.bytes";
}

// Names of the opcodes read here, and of the others a refusal may meet.
const char* opcode_name(uint8_t op) {
  static const std::unordered_map<uint8_t, const char*> names = {
      {0x80, "PROTO"},
      {0x95, "FRAME"},
      {'.', "STOP"},
      {'(', "MARK"},
      {'}', "EMPTY_DICT"},
      {']', "EMPTY_LIST"},
      {')', "EMPTY_TUPLE"},
      {'t', "TUPLE"},
      {0x85, "TUPLE1"},
      {0x86, "TUPLE2"},
      {0x87, "TUPLE3"},
      {'d', "DICT"},
      {'l', "LIST"},
      {'a', "APPEND"},
      {'e', "APPENDS"},
      {'s', "SETITEM"},
      {'u', "SETITEMS"},
      {'N', "NONE"},
      {0x88, "NEWTRUE"},
      {0x89, "NEWFALSE"},
      {'J', "BININT"},
      {'K', "BININT1"},
      {'M', "BININT2"},
      {0x8a, "LONG1"},
      {'U', "SHORT_BINSTRING"},
      {'T', "BINSTRING"},
      {'X', "BINUNICODE"},
      {0x8c, "SHORT_BINUNICODE"},
      {0x8d, "BINUNICODE8"},
      {'C', "SHORT_BINBYTES"},
      {'B', "BINBYTES"},
      {0x8e, "BINBYTES8"},
      {'q', "BINPUT"},
      {'r', "LONG_BINPUT"},
      {0x94, "MEMOIZE"},
      {'h', "BINGET"},
      {'j', "LONG_BINGET"},
      {'c', "GLOBAL"},
      {0x93, "STACK_GLOBAL"},
      {'R', "REDUCE"},
      {'b', "BUILD"},
      {'i', "INST"},
      {'o', "OBJ"},
      {0x81, "NEWOBJ"},
      {0x92, "NEWOBJ_EX"},
      {'P', "PERSID"},
      {'Q', "BINPERSID"},
      {0x82, "EXT1"},
      {'G', "BINFLOAT"},
      {'F', "FLOAT"},
      {'I', "INT"},
      {'L', "LONG"},
      {0x8b, "LONG4"},
      {'S', "STRING"},
      {'V', "UNICODE"},
      {'p', "PUT"},
      {'g', "GET"},
      {0x96, "BYTEARRAY8"},
      {0x97, "NEXT_BUFFER"},
      {0x8f, "EMPTY_SET"},
      {0x90, "ADDITEMS"},
      {0x91, "FROZENSET"},
      {'0', "POP"},
      {'1', "POP_MARK"},
      {'2', "DUP"},
  };
  const auto it = names.find(op);
  return it == names.end() ? "unknown" : it->second;
}

// UTF-8 text of code points below 256 as the bytes they stand for (_codecs.encode(s, "latin1"),
// how Python 3 writes bytes at protocol 2); false for anything else.
bool latin1_bytes(const std::string& text, std::string& out) {
  out.clear();
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if ((c == 0xc2 || c == 0xc3) && i + 1 < text.size() &&
               (static_cast<unsigned char>(text[i + 1]) & 0xc0) == 0x80) {
      out += static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(text[++i]) & 0x3f));
    } else {
      return false;
    }
  }
  return true;
}

// The bytes of one array element of a type code such as "u1" or "f8"; 0 when not understood.
int64_t item_size(const std::string& code) {
  if (code.size() < 2 || code.find_first_of("biuf") != 0 ||
      code.find_first_not_of("0123456789", 1) != std::string::npos || code.size() > 3)
    return 0;
  return std::stoi(code.substr(1));
}

class Machine {
 public:
  Machine(const uint8_t* data, size_t size, const std::string& what)
      : data_(data), size_(size), what_(what) {}

  Pickle run() {
    for (;;) {
      op_at_ = pos_;
      RT_CHECK(pos_ < size_, what_, ": pickle: ends at byte ", size_,
               " without the STOP opcode (truncated?)");
      op_ = data_[pos_++];
      if (op_ == '.') break;
      if (!scalar() && !container() && !reference() && !object()) fail("unsupported opcode");
    }
    p_.root = pop();
    return std::move(p_);
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    char code[8];
    std::snprintf(code, sizeof code, "0x%02x", op_);
    throw Error(str_cat(what_, ": pickle: byte ", op_at_, ", opcode ", opcode_name(op_), " (", code,
                        "): ", why));
  }

  const uint8_t* take(uint64_t n) {
    if (n > size_ - pos_) fail(str_cat("needs ", n, " more bytes, ", size_ - pos_, " are left"));
    const uint8_t* at = data_ + pos_;
    pos_ += static_cast<size_t>(n);
    return at;
  }

  uint64_t little(int n) {
    const uint8_t* b = take(static_cast<uint64_t>(n));
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | b[i];
    return v;
  }

  std::string line() {
    const size_t start = pos_;
    while (pos_ < size_ && data_[pos_] != '\n') ++pos_;
    if (pos_ == size_) fail("a line without its newline");
    return std::string(reinterpret_cast<const char*>(data_ + start), pos_++ - start);
  }

  PickleValue& at(int64_t index) { return p_.values[static_cast<size_t>(index)]; }

  // Note: every structure the machine grows is bounded, or a small file would make it hold
  // gigabytes: MEMOIZE, BINGET and MARK are one or two bytes each, and APPENDS can add the same
  // references to a list again and again.
  void check_room(size_t size, const char* what) {
    if (size >= kMaxValues)
      fail(str_cat("more than ", kMaxValues, " ", what, ", more than any dataset file holds"));
  }

  int64_t make(PickleValue value) {
    check_room(p_.values.size(), "objects");
    p_.values.push_back(std::move(value));
    return static_cast<int64_t>(p_.values.size()) - 1;
  }

  void push_index(int64_t index) {
    check_room(stack_.size(), "objects on the stack");
    stack_.push_back(index);
  }

  void push(PickleValue value) { push_index(make(std::move(value))); }

  // A container's elements, counted against the bound on the references all containers hold.
  void count_references(size_t count) {
    references_ += count;
    check_room(references_, "references held by lists, tuples and dicts");
  }

  int64_t pop() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("the stack is empty");
    const int64_t v = stack_.back();
    stack_.pop_back();
    return v;
  }

  int64_t peek() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("the stack is empty");
    return stack_.back();
  }

  std::vector<int64_t> pop_mark() {
    if (marks_.empty()) fail("no MARK before it");
    std::vector<int64_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()),
                               stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }

  void push_sequence(PickleKind kind, std::vector<int64_t> items) {
    count_references(items.size());
    PickleValue v;
    v.kind = kind;
    v.items = std::move(items);
    push(std::move(v));
  }

  void push_string(PickleKind kind, uint64_t length) {
    PickleValue v;
    v.kind = kind;
    v.bytes.assign(reinterpret_cast<const char*>(take(length)), static_cast<size_t>(length));
    push(std::move(v));
  }

  void push_integer(PickleKind kind, int64_t value) {
    PickleValue v;
    v.kind = kind;
    v.integer = value;
    push(std::move(v));
  }

  // LONG1: a little-endian two's complement integer of up to 8 bytes.
  int64_t long1() {
    const int n = static_cast<int>(little(1));
    if (n > 8) fail(str_cat("an integer of ", n, " bytes, beyond 64 bits"));
    if (n == 0) return 0;
    uint64_t v = little(n);
    if (n < 8 && (v >> (8 * n - 1)) != 0) v |= ~uint64_t{0} << (8 * n);
    return static_cast<int64_t>(v);
  }

  bool scalar() {
    switch (op_) {
      case 'N':
        push({});
        return true;
      case 0x88:
        push_integer(PickleKind::boolean, 1);
        return true;
      case 0x89:
        push_integer(PickleKind::boolean, 0);
        return true;
      case 'J':
        push_integer(PickleKind::integer, static_cast<int32_t>(little(4)));
        return true;
      case 'K':
        push_integer(PickleKind::integer, static_cast<int64_t>(little(1)));
        return true;
      case 'M':
        push_integer(PickleKind::integer, static_cast<int64_t>(little(2)));
        return true;
      case 0x8a:
        push_integer(PickleKind::integer, long1());
        return true;
      case 'U':
      case 'C':
        push_string(PickleKind::bytes, little(1));
        return true;
      case 'T':
      case 'B':
        push_string(PickleKind::bytes, little(4));
        return true;
      case 0x8e:
        push_string(PickleKind::bytes, little(8));
        return true;
      case 0x8c:
        push_string(PickleKind::text, little(1));
        return true;
      case 'X':
        push_string(PickleKind::text, little(4));
        return true;
      case 0x8d:
        push_string(PickleKind::text, little(8));
        return true;
      default:
        return false;
    }
  }

  // APPEND(S) to a list, SETITEM(S) to a dict: the object under the items.
  void add_items(const std::vector<int64_t>& items, PickleKind kind) {
    const int64_t target = peek();
    if (at(target).kind != kind)
      fail(str_cat("adds items to ", pickle_kind_name(at(target).kind), ", not ",
                   pickle_kind_name(kind)));
    if (kind == PickleKind::dict && items.size() % 2 != 0) fail("a key without its value");
    count_references(items.size());
    at(target).items.insert(at(target).items.end(), items.begin(), items.end());
  }

  bool container() {
    switch (op_) {
      case '(':
        check_room(marks_.size(), "MARKs");
        marks_.push_back(stack_.size());
        return true;
      case '}':
        push_sequence(PickleKind::dict, {});
        return true;
      case ']':
        push_sequence(PickleKind::list, {});
        return true;
      case ')':
        push_sequence(PickleKind::tuple, {});
        return true;
      case 'd':
        push_sequence(PickleKind::dict, pop_mark());
        return true;
      case 'l':
        push_sequence(PickleKind::list, pop_mark());
        return true;
      case 't':
        push_sequence(PickleKind::tuple, pop_mark());
        return true;
      case 0x85:
      case 0x86:
      case 0x87: {
        std::vector<int64_t> items(static_cast<size_t>(op_ - 0x84));
        for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
        push_sequence(PickleKind::tuple, std::move(items));
        return true;
      }
      case 'a':
      case 's': {
        std::vector<int64_t> items(op_ == 'a' ? 1 : 2);
        for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
        add_items(items, op_ == 'a' ? PickleKind::list : PickleKind::dict);
        return true;
      }
      case 'e':
      case 'u': {
        const std::vector<int64_t> items = pop_mark();
        add_items(items, op_ == 'e' ? PickleKind::list : PickleKind::dict);
        return true;
      }
      default:
        return false;
    }
  }

  void get(uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) fail(str_cat("memo entry ", key, " was never stored"));
    push_index(it->second);
  }

  void put(uint64_t key) {
    if (memo_.count(key) == 0) check_room(memo_.size(), "memo entries");
    memo_[key] = peek();
  }

  // The memo, the protocol and framing (read through: the frames are contiguous).
  bool reference() {
    switch (op_) {
      case 'q':
        put(little(1));
        return true;
      case 'r':
        put(little(4));
        return true;
      case 0x94:
        put(memo_.size());
        return true;
      case 'h':
        get(little(1));
        return true;
      case 'j':
        get(little(4));
        return true;
      case 0x80: {
        const uint64_t protocol = little(1);
        if (protocol > 4) fail(str_cat("protocol ", protocol, " (this reader knows 2 to 4)"));
        return true;
      }
      case 0x95:
        little(8);
        return true;
      default:
        return false;
    }
  }

  void push_global(const std::string& module, const std::string& name) {
    const std::string full = module + "." + name;
    if (!allowed_global(full))
      fail(str_cat("global ", full,
                   " is not allowed (only plain data and numpy arrays are read: ", kAllowed, ")"));
    PickleValue v;
    v.kind = PickleKind::global;
    v.bytes = full;
    push(std::move(v));
  }

  const std::string& text_of(int64_t index, const char* role) {
    const PickleValue& v = at(index);
    if (v.kind != PickleKind::text && v.kind != PickleKind::bytes)
      fail(str_cat(role, " is ", pickle_kind_name(v.kind), ", expected a string"));
    return v.bytes;
  }

  bool object() {
    switch (op_) {
      case 'c': {
        const std::string module = line();
        push_global(module, line());
        return true;
      }
      case 0x93: {
        const int64_t name = pop(), module = pop();
        push_global(text_of(module, "the module"), text_of(name, "the name"));
        return true;
      }
      case 'R': {
        const int64_t args = pop(), callable = pop();
        push(reduce(callable, args));
        return true;
      }
      case 'b': {
        const int64_t state = pop();
        build(peek(), state);
        return true;
      }
      default:
        return false;
    }
  }

  const std::vector<int64_t>& tuple_of(int64_t index, size_t lo, size_t hi, const char* role) {
    const PickleValue& v = at(index);
    if (v.kind != PickleKind::tuple || v.items.size() < lo || v.items.size() > hi)
      fail(str_cat(role, " is ", pickle_kind_name(v.kind), " of ", v.items.size(),
                   " items, expected a tuple of ", lo, " to ", hi));
    return v.items;
  }

  // What an allowed global makes of its arguments.
  PickleValue reduce(int64_t callable, int64_t args_index) {
    if (at(callable).kind != PickleKind::global)
      fail(str_cat("calls ", pickle_kind_name(at(callable).kind), ", not a global"));
    const std::string name = at(callable).bytes;
    const std::vector<int64_t> args = tuple_of(args_index, 0, 3, "the arguments");
    PickleValue v;
    if (is_reconstruct(name) && args.size() == 3 && at(args[0]).kind == PickleKind::global &&
        at(args[0]).bytes == "numpy.ndarray") {
      v.kind = PickleKind::array;
    } else if (name == "numpy.dtype" && !args.empty()) {
      v.kind = PickleKind::dtype;
      v.bytes = text_of(args[0], "the dtype's code");
      if (v.bytes.size() > 16) fail(str_cat("a dtype code of ", v.bytes.size(), " bytes"));
      v.dtype = "|";
    } else if (name == "_codecs.encode" && args.size() == 2 &&
               text_of(args[1], "the encoding").rfind("latin", 0) == 0) {
      v.kind = PickleKind::bytes;
      if (!latin1_bytes(text_of(args[0], "the text"), v.bytes))
        fail("_codecs.encode of text that is not latin-1");
      // Each text is encoded once in a pickle of data: more bytes than the input is an attack.
      made_ += v.bytes.size();
      if (made_ > size_) fail("_codecs.encode makes more bytes than the whole pickle holds");
    } else if (name.find(".bytes") != std::string::npos && args.empty()) {
      v.kind = PickleKind::bytes;
    } else {
      fail(str_cat("REDUCE of ", name, " with ", args.size(), " arguments is not understood"));
    }
    return v;
  }

  void build(int64_t target, int64_t state) {
    const PickleKind kind = at(target).kind;
    if (kind == PickleKind::dtype) {
      const std::vector<int64_t> s = tuple_of(state, 2, 9, "the dtype's state");
      const std::string order = text_of(s[1], "the byte order");
      if (order.size() != 1 || order.find_first_of("|<>=") != 0)
        fail("the dtype's byte order is '" + order + "', not one of | < > =");
      at(target).dtype = order;
    } else if (kind == PickleKind::array) {
      build_array(target, tuple_of(state, 4, 5, "the array's state"));
    } else {
      fail(str_cat("BUILD of ", pickle_kind_name(kind), " is not understood"));
    }
    at(target).built = true;
  }

  // ndarray.__setstate__: ([version,] shape, dtype, is_fortran, raw data).
  void build_array(int64_t target, std::vector<int64_t> s) {
    if (s.size() == 5) s.erase(s.begin());
    PickleValue& dtype = at(s[1]);
    if (dtype.kind != PickleKind::dtype || !dtype.built)
      fail(str_cat("the array's dtype is ", pickle_kind_name(dtype.kind)));
    const int64_t item = item_size(dtype.bytes);
    if (item == 0) fail("arrays of dtype " + dtype.bytes + " are not read");
    std::vector<int64_t> shape;
    int64_t count = 1;
    for (int64_t d : tuple_of(s[0], 0, 32, "the array's shape")) {
      if (at(d).kind != PickleKind::integer || at(d).integer < 0 || at(d).integer > (1LL << 40))
        fail("the array's shape holds a value that is not a size");
      shape.push_back(at(d).integer);
      count = at(d).integer == 0 || count <= (1LL << 40) / at(d).integer ? count * at(d).integer
                                                                         : (1LL << 41);
    }
    const PickleValue& data = at(s[3]);
    if (data.kind != PickleKind::bytes || static_cast<int64_t>(data.bytes.size()) != count * item)
      fail(str_cat("the array's data is ", pickle_kind_name(data.kind), " of ", data.bytes.size(),
                   " bytes, expected ", count * item, " bytes"));
    PickleValue& array = at(target);
    array.shape = std::move(shape);
    array.dtype = at(s[1]).dtype + at(s[1]).bytes;
    array.fortran_order = at(s[2]).integer != 0;
    array.bytes = std::move(at(s[3]).bytes);  // the raw data, pickled for this array alone
  }

  const uint8_t* data_;
  size_t size_, pos_ = 0, op_at_ = 0, made_ = 0, references_ = 0;
  uint8_t op_ = 0;
  std::string what_;
  Pickle p_;
  std::vector<int64_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, int64_t> memo_;
};

}  // namespace

const PickleValue* Pickle::find(const PickleValue& dict, const std::string& key) const {
  for (size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const PickleValue& k = (*this)[dict.items[i]];
    if ((k.kind == PickleKind::bytes || k.kind == PickleKind::text) && k.bytes == key)
      return &(*this)[dict.items[i + 1]];
  }
  return nullptr;
}

Pickle read_pickle(const uint8_t* data, size_t size, const std::string& what) {
  return Machine(data, size, what).run();
}

std::string pickle_kind_name(PickleKind kind) {
  switch (kind) {
    case PickleKind::none:
      return "None";
    case PickleKind::boolean:
      return "a boolean";
    case PickleKind::integer:
      return "an integer";
    case PickleKind::bytes:
      return "bytes";
    case PickleKind::text:
      return "text";
    case PickleKind::list:
      return "a list";
    case PickleKind::tuple:
      return "a tuple";
    case PickleKind::dict:
      return "a dict";
    case PickleKind::global:
      return "a global";
    case PickleKind::array:
      return "an array";
    case PickleKind::dtype:
      return "a dtype";
  }
  return "?";
}

}  // namespace ringtrain
