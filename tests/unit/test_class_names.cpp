// Class names: UTF-8 text without control characters is accepted as it is; anything else is
// refused with the name shown escaped, the first bad byte or character and its offset, and the
// remedy the caller gives.
#include <gtest/gtest.h>

#include <string>

#include "ringtrain/core/class_names.hpp"
#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

using namespace std::string_literals;

std::string refusal(const std::string& name) {
  try {
    check_class_name(name, "x: class", "rename it");
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(ClassNames, TextIsAcceptedAsItIs) {
  for (const char* name : {"cat", "sea lion",
                           "\xC3\xB1"
                           "and\xC3\xBA",
                           "\xE7\x8C\xAB", "\xF0\x9F\x90\x88",
                           "a\xC2\xA0"
                           "b"}) {
    EXPECT_EQ(refusal(name), "accepted") << name;
    EXPECT_EQ(escape_text(name), name);
  }
}

TEST(ClassNames, BytesThatAreNotUtf8AreRefusedEscaped) {
  EXPECT_EQ(refusal("c\xFF\xFE"),
            "x: class 'c\\xff\\xfe' is not valid UTF-8 (byte \\xff at offset 1): class names are "
            "stored as UTF-8 text: rename it");
  // A stray continuation byte, a truncated sequence, an overlong '/', a surrogate, beyond
  // U+10FFFF, a lead byte no UTF-8 has.
  for (const std::string& name : {"\x80"s, "ab\xC3"s, "\xC0\xAF"s, "\xED\xA0\x80"s,
                                  "\xF4\x90\x80\x80"s, "\xF8\x88\x80\x80\x80"s})
    EXPECT_NE(refusal(name).find("is not valid UTF-8"), std::string::npos) << refusal(name);
  EXPECT_EQ(refusal(""), "x: class is an empty class name: rename it");
}

TEST(ClassNames, ControlCharactersAreRefusedEscaped) {
  EXPECT_EQ(refusal("do\ng"),
            "x: class 'do\\x0ag' holds a control character (U+000A at offset 2), which would "
            "break the lines that show it: rename it");
  EXPECT_NE(refusal("a\0b"s).find("'a\\x00b' holds a control character (U+0000 at offset 1)"),
            std::string::npos);
  EXPECT_NE(refusal("tab\t").find("U+0009"), std::string::npos);
  EXPECT_NE(refusal("del\x7F").find("U+007F"), std::string::npos);
  EXPECT_NE(refusal("c1\xC2\x85").find("'c1\\xc2\\x85' holds a control character (U+0085"),
            std::string::npos);
  EXPECT_EQ(escape_text("a\nb\xFF\xC3\xB1"), "a\\x0ab\\xff\xC3\xB1");
}

}  // namespace
}  // namespace ringtrain
