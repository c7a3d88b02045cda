// The safe pickle reader: pickles as Python 2's cPickle (protocol 2) and Python 3 with numpy
// (protocols 2 and 4) write a dict of a uint8 array and a list of labels read to exactly those
// values; what it must not run or cannot read is refused, naming the opcode or the global.
#include <gtest/gtest.h>

#include <string>

#include "ringtrain/core/error.hpp"
#include "ringtrain/import/pickle_reader.hpp"

namespace ringtrain {
namespace {

using namespace std::string_literals;

Pickle read(const std::string& bytes) {
  return read_pickle(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "test.pkl");
}

std::string error_of(const std::string& bytes) {
  try {
    read(bytes);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

#define EXPECT_MENTIONS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// {b'data': uint8 [[1, 2, 3], [4, 250, 6]], b'labels': [1, 2]} as each writer wrote it.
// Python 2's cPickle, protocol 2: the layout of the official CIFAR-10 batch files.
const std::string kPython2 =
    "\x80\x02}q\x01(U\x04"
    "dataq\x02"
    "cnumpy.core.multiarray\n_reconstruct\nq\x03"
    "cnumpy\nndarray\nq\x04K\x00\x85U\x01"
    "b\x87Rq\x05(K\x01K\x02K\x03\x86"
    "cnumpy\ndtype\nq\x06U\x02u1K\x00K\x01\x87Rq\x07"
    "(K\x03U\x01|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb\x89U\x06\x01\x02\x03\x04\xfa\x06q\x08"
    "tbU\x06labelsq\x09]q\x0a(K\x01K\x02"
    "eu."s;
// Python 3.11 and numpy 1.24, pickle.dumps(..., protocol=2): bytes as _codecs.encode(latin-1).
const std::string kPython3Protocol2 =
    "\x80\x02}q\x00(c_codecs\nencode\nq\x01X\x04\x00\x00\x00"
    "dataq\x02X\x06\x00\x00\x00latin1q\x03"
    "\x86q\x04Rq\x05"
    "cnumpy.core.multiarray\n_reconstruct\nq\x06"
    "cnumpy\nndarray\nq\x07K\x00\x85q\x08"
    "h\x01X\x01\x00\x00\x00"
    "bq\th\x03\x86q\nRq\x0b\x87q\x0cRq\r(K\x01K\x02K\x03\x86q\x0e"
    "cnumpy\ndtype\nq\x0fX\x02\x00\x00\x00u1q\x10\x89\x88\x87q\x11Rq\x12(K\x03X\x01\x00\x00\x00|q"
    "\x13NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tq\x14"
    "b\x89h\x01X\x07\x00\x00\x00\x01\x02\x03"
    "\x04\xc3\xba\x06q\x15h\x03\x86q\x16Rq\x17tq\x18"
    "bh\x01X\x06\x00\x00\x00labelsq\x19h\x03\x86q"
    "\x1aRq\x1b]q\x1c(K\x01K\x02"
    "eu."s;
// The same, protocol 4: frames, STACK_GLOBAL, MEMOIZE, SHORT_BINBYTES.
const std::string kPython3Protocol4 =
    "\x80\x04\x95\xac\x00\x00\x00\x00\x00\x00\x00}\x94(C\x04"
    "data\x94\x8c\x15numpy.core.multiarray"
    "\x94\x8c\x0c_reconstruct\x94\x93\x94\x8c\x05numpy\x94\x8c\x07ndarray\x94\x93\x94K\x00\x85\x94"
    "C\x01"
    "b\x94\x87\x94R\x94(K\x01K\x02K\x03\x86\x94h\x05\x8c\x05"
    "dtype\x94\x93\x94\x8c\x02u1\x94"
    "\x89\x88\x87\x94R\x94(K\x03\x8c\x01|\x94NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00t\x94"
    "b\x89"
    "C\x06\x01\x02\x03\x04\xfa\x06\x94t\x94"
    "bC\x06labels\x94]\x94(K\x01K\x02"
    "eu."s;

TEST(PickleReader, ReadsTheArrayAndLabelsOfEachWriter) {
  for (const std::string* bytes : {&kPython2, &kPython3Protocol2, &kPython3Protocol4}) {
    const Pickle p = read(*bytes);
    ASSERT_EQ(p.top().kind, PickleKind::dict);
    const PickleValue* data = p.find(p.top(), "data");
    ASSERT_NE(data, nullptr);
    EXPECT_EQ(data->kind, PickleKind::array);
    EXPECT_EQ(data->dtype, "|u1");
    EXPECT_EQ(data->shape, (std::vector<int64_t>{2, 3}));
    EXPECT_FALSE(data->fortran_order);
    EXPECT_EQ(data->bytes, "\x01\x02\x03\x04\xfa\x06"s);
    const PickleValue* labels = p.find(p.top(), "labels");
    ASSERT_NE(labels, nullptr);
    ASSERT_EQ(labels->kind, PickleKind::list);
    ASSERT_EQ(labels->items.size(), 2u);
    EXPECT_EQ(p[labels->items[0]].integer, 1);
    EXPECT_EQ(p[labels->items[1]].integer, 2);
    EXPECT_EQ(p.find(p.top(), "filenames"), nullptr);
  }
}

// BINSTRING (4-byte length) and LONG_BINPUT, as cPickle writes a batch's 30 720 000 bytes and
// its memo beyond 255; integers of every width, None and booleans.
TEST(PickleReader, ReadsLongStringsIntegersAndTheMemo) {
  const std::string payload(300, '\x7f');
  const std::string bytes = "\x80\x02](T\x2c\x01\x00\x00"s + payload +
                            "r\x00\x01\x00\x00j\x00\x01\x00\x00K\xffM\x10\x27J\xfe\xff\xff\xff"
                            "\x8a\x02\x00\xff\x8a\x00N\x88\x89"
                            "e."s;
  const Pickle p = read(bytes);
  const std::vector<int64_t>& items = p.top().items;
  ASSERT_EQ(items.size(), 10u);
  EXPECT_EQ(p[items[0]].bytes, payload);
  EXPECT_EQ(items[1], items[0]);  // LONG_BINGET: the same object
  const std::vector<int64_t> integers = {255, 10000, -2, -256, 0};
  for (size_t i = 0; i < integers.size(); ++i) EXPECT_EQ(p[items[2 + i]].integer, integers[i]);
  EXPECT_EQ(p[items[7]].kind, PickleKind::none);
  EXPECT_EQ(p[items[8]].kind, PickleKind::boolean);
  EXPECT_EQ(p[items[8]].integer, 1);
  EXPECT_EQ(p[items[9]].integer, 0);
}

// A list that holds itself (values refer to each other by index): read, no loop, no leak.
TEST(PickleReader, ReadsAListThatHoldsItself) {
  const Pickle p = read(
      "\x80\x02]q\x00h\x00"
      "a."s);
  ASSERT_EQ(p.top().items.size(), 1u);
  EXPECT_EQ(p.top().items[0], p.root);
}

TEST(PickleReaderErrors, RefusesGlobalsOutsideTheAllowlist) {
  const std::string os_system = error_of(
      "\x80\x02"
      "cos\nsystem\nq\x01U\x02idq\x02\x85Rq\x03."s);
  EXPECT_MENTIONS(os_system, "test.pkl: pickle: byte 2, opcode GLOBAL (0x63)");
  EXPECT_MENTIONS(os_system, "global os.system is not allowed");
  const std::string eval = error_of(
      "\x80\x04\x8c\x08"
      "builtins\x8c\x04"
      "eval\x93."s);
  EXPECT_MENTIONS(eval, "opcode STACK_GLOBAL");
  EXPECT_MENTIONS(eval, "global builtins.eval is not allowed");
  // An allowed global that is not a constructor here.
  EXPECT_MENTIONS(error_of("\x80\x02"
                           "cnumpy\nndarray\n)R."s),
                  "REDUCE of numpy.ndarray with 0 arguments is not understood");
}

TEST(PickleReaderErrors, RefusesOpcodesItDoesNotRun) {
  EXPECT_MENTIONS(error_of("\x80\x02(i__main__\nX\n."s), "byte 3, opcode INST (0x69): unsupported");
  EXPECT_MENTIONS(error_of("\x80\x02G?\xf0\x00\x00\x00\x00\x00\x00."s),
                  "opcode BINFLOAT (0x47): unsupported");
  EXPECT_MENTIONS(error_of("\x80\x05N."s), "protocol 5");
  EXPECT_MENTIONS(error_of("\x80\x02\xff."s), "opcode unknown (0xff)");
}

TEST(PickleReaderErrors, RefusesCorruptPickles) {
  EXPECT_MENTIONS(error_of(kPython2.substr(0, kPython2.size() / 2)), "test.pkl: pickle: ");
  EXPECT_MENTIONS(error_of(kPython2.substr(0, kPython2.size() - 1)), "without the STOP opcode");
  EXPECT_MENTIONS(error_of("\x80\x02T\xff\xff\xff\x7f"s),
                  "needs 2147483647 more bytes, 0 are left");
  EXPECT_MENTIONS(error_of("\x80\x02h\x05."s), "memo entry 5 was never stored");
  EXPECT_MENTIONS(error_of("\x80\x02}K\x01"
                           "a."s),
                  "adds items to a dict, not a list");
  EXPECT_MENTIONS(error_of("\x80\x02."s), "the stack is empty");
  EXPECT_MENTIONS(error_of("\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01."s),
                  "an integer of 9 bytes");
  EXPECT_MENTIONS(error_of("\x80\x02"
                           "e."s),
                  "no MARK before it");
  // The array's data one byte short of its shape.
  std::string short_data = kPython2;
  short_data.replace(short_data.find("U\x06\x01\x02"), 8, "U\x05\x01\x02\x03\x04\xfa"s);
  EXPECT_MENTIONS(error_of(short_data), "the array's data is bytes of 5 bytes, expected 6 bytes");
}

// Opcodes of one or two bytes that each make the reader hold more: refused at the bound, naming
// it, long before a small file could make it hold gigabytes.
TEST(PickleReaderErrors, RefusesGrowthBeyondItsBounds) {
  constexpr size_t kMany = (size_t{1} << 20) + 10;
  const auto repeated = [](const std::string& op, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out += op;
    return out;
  };
  EXPECT_MENTIONS(error_of("\x80\x04N"s + repeated("\x94", kMany) + "."),
                  "opcode MEMOIZE (0x94): more than 1048576 memo entries");
  EXPECT_MENTIONS(error_of("\x80\x02Nq\x01"s + repeated("h\x01", kMany) + "."),
                  "opcode BINGET (0x68): more than 1048576 objects on the stack");
  EXPECT_MENTIONS(error_of("\x80\x02"s + repeated("(", kMany) + "."),
                  "opcode MARK (0x28): more than 1048576 MARKs");
  // The same 1000 references appended to one list again and again.
  const std::string appends = "(" + repeated("h\x01", 1000) + "e";
  EXPECT_MENTIONS(error_of("\x80\x02Nq\x01]"s + repeated(appends, 1100) + "."),
                  "opcode APPENDS (0x65): more than 1048576 references held by lists");
  EXPECT_MENTIONS(error_of("\x80\x02"s + "cnumpy\ndtype\n" + "X\x20\x00\x00\x00"s +
                           repeated("u", 32) + "\x85R."),
                  "a dtype code of 32 bytes");
}

}  // namespace
}  // namespace ringtrain
