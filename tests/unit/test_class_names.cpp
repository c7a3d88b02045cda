// Class names: UTF-8 text that shows as it is is accepted as it is; anything else (bytes that are
// not UTF-8, characters that do not show or break the line, blank names) is refused as a
// configuration error with the name shown escaped, the first bad byte or character and its
// offset, and the remedy the caller gives; two names that are equal in NFC form are refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ringtrain/core/class_names.hpp"
#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

using namespace std::string_literals;

std::string refusal(const std::string& name) {
  try {
    check_class_name(name, "x: class", "rename it");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "accepted";
}

std::string distinct_refusal(const std::vector<std::string>& names) {
  try {
    check_distinct_class_names(names, "x: class names", "rename one");
  } catch (const ConfigError& e) {
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
            "hide or break the name where it is shown: rename it");
  EXPECT_NE(refusal("a\0b"s).find("'a\\x00b' holds a control character (U+0000 at offset 1)"),
            std::string::npos);
  EXPECT_NE(refusal("tab\t").find("U+0009"), std::string::npos);
  EXPECT_NE(refusal("del\x7F").find("U+007F"), std::string::npos);
  EXPECT_NE(refusal("c1\xC2\x85").find("'c1\\xc2\\x85' holds a control character (U+0085"),
            std::string::npos);
  EXPECT_EQ(escape_text("a\nb\xFF\xC3\xB1"), "a\\x0ab\\xff\xC3\xB1");
}

TEST(ClassNames, InvisibleAndLineBreakingCharactersAreRefusedEscaped) {
  // Zero-width space, byte order mark, right-to-left override, left-to-right mark, word joiner,
  // line separator, paragraph separator, noncharacters U+FDD0 and U+FFFF.
  const struct {
    std::string name, escaped, kind;
  } cases[] = {
      {"ca\xE2\x80\x8Bt", "ca\\xe2\\x80\\x8bt", "format character (U+200B at offset 2)"},
      {"\xEF\xBB\xBF"
       "cat",
       "\\xef\\xbb\\xbfcat", "format character (U+FEFF at offset 0)"},
      {"dog\xE2\x80\xAEtac", "dog\\xe2\\x80\\xaetac", "format character (U+202E at offset 3)"},
      {"a\xE2\x80\x8E", "a\\xe2\\x80\\x8e", "format character (U+200E at offset 1)"},
      {"a\xE2\x81\xA0"
       "b",
       "a\\xe2\\x81\\xa0b", "format character (U+2060 at offset 1)"},
      {"a\xE2\x80\xA8"
       "b",
       "a\\xe2\\x80\\xa8b", "line or paragraph separator (U+2028"},
      {"a\xE2\x80\xA9"
       "b",
       "a\\xe2\\x80\\xa9b", "line or paragraph separator (U+2029"},
      {"a\xEF\xB7\x90", "a\\xef\\xb7\\x90", "noncharacter (U+FDD0 at offset 1)"},
      {"a\xEF\xBF\xBF", "a\\xef\\xbf\\xbf", "noncharacter (U+FFFF at offset 1)"},
  };
  for (const auto& c : cases) {
    const std::string why = refusal(c.name);
    EXPECT_NE(why.find("x: class '" + c.escaped + "' holds "), std::string::npos) << why;
    EXPECT_NE(why.find(c.kind), std::string::npos) << why;
    EXPECT_NE(why.find(": rename it"), std::string::npos) << why;
  }
}

TEST(ClassNames, BlankNamesAreRefused) {
  for (const char* name : {" ", "   ", "\xC2\xA0", "\xE3\x80\x80", " \xE2\x80\x83 "})
    EXPECT_NE(refusal(name).find("is blank (only white space): rename it"), std::string::npos)
        << refusal(name);
  EXPECT_EQ(refusal(" cat"), "accepted");
}

TEST(ClassNames, NamesEqualInNfcAreOneName) {
  const std::string composed = "caf\xC3\xA9";     // e with acute accent: U+00E9
  const std::string decomposed = "cafe\xCC\x81";  // e, then combining acute accent U+0301
  EXPECT_EQ(nfc(decomposed), composed);
  EXPECT_EQ(nfc(composed), composed);
  EXPECT_EQ(distinct_refusal({"bird", composed, "dog", decomposed}),
            "x: class names 1 '" + composed + "' and 3 '" + decomposed +
                "' are the same name (equal in Unicode's NFC form, as they show): rename one");
  EXPECT_NE(distinct_refusal({"cat", "dog", "cat"}).find("0 'cat' and 2 'cat'"), std::string::npos);
  // Compatibility forms look different and stay different classes (NFC, not NFKC).
  EXPECT_EQ(distinct_refusal({"\xEF\xAC\x81le", "file", composed}), "accepted");
}

}  // namespace
}  // namespace ringtrain
