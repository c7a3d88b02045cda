#include "ringtrain/core/class_names.hpp"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <cstdint>
#include <cstdio>
#include <map>

#include "ringtrain/core/error.hpp"

namespace ringtrain {
namespace {

// One character of UTF-8 text: its code point and bytes; 0 bytes where `text` at `at` is not
// valid UTF-8 (a stray continuation byte, a truncated sequence, an overlong form, a surrogate,
// beyond U+10FFFF).
struct Utf8Char {
  uint32_t code = 0;
  size_t bytes = 0;
};

Utf8Char utf8_char(const std::string& text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return {lead, 1};
  const size_t length = lead >= 0xF8   ? 0
                        : lead >= 0xF0 ? 4
                        : lead >= 0xE0 ? 3
                        : lead >= 0xC0 ? 2
                                       : 0;
  if (length == 0 || at + length > text.size()) return {};
  uint32_t code = lead & (0x7F >> length);
  for (size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return {};
    code = (code << 6) | (byte(at + i) & 0x3F);
  }
  static const uint32_t kSmallest[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kSmallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return {};
  return {code, length};
}

// Why `code` cannot be part of a class name, or nullptr: characters that do not show, or break
// or reorder the line that shows them (Unicode's categories Cc, Cf, Zl and Zp), and the
// noncharacters, which are never text.
const char* refused_kind(uint32_t code) {
  const auto c = static_cast<UChar32>(code);
  switch (u_charType(c)) {
    case U_CONTROL_CHAR:
      return "a control character";
    case U_FORMAT_CHAR:
      return "an invisible format character";
    case U_LINE_SEPARATOR:
    case U_PARAGRAPH_SEPARATOR:
      return "a line or paragraph separator";
    default:
      return u_hasBinaryProperty(c, UCHAR_NONCHARACTER_CODE_POINT) ? "a Unicode noncharacter"
                                                                   : nullptr;
  }
}

std::string hex_byte(unsigned char b) {
  char text[8];
  std::snprintf(text, sizeof text, "\\x%02x", b);
  return text;
}

}  // namespace

std::string escape_text(const std::string& text) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    const Utf8Char c = utf8_char(text, at);
    const size_t bytes = c.bytes == 0 ? 1 : c.bytes;
    for (size_t i = at; i < at + bytes; ++i)
      out += c.bytes == 0 || refused_kind(c.code) ? hex_byte(static_cast<unsigned char>(text[i]))
                                                  : std::string(1, text[i]);
    at += bytes;
  }
  return out;
}

void check_class_name(const std::string& name, const std::string& where,
                      const std::string& remedy) {
  RT_CHECK_AS(ConfigError, !name.empty(), where, " is an empty class name: ", remedy);
  bool blank = true;
  for (size_t at = 0; at < name.size();) {
    const Utf8Char c = utf8_char(name, at);
    RT_CHECK_AS(ConfigError, c.bytes > 0, where, " '", escape_text(name),
                "' is not valid UTF-8 (byte ", hex_byte(static_cast<unsigned char>(name[at])),
                " at offset ", at, "): class names are stored as UTF-8 text: ", remedy);
    char code[16];
    std::snprintf(code, sizeof code, "U+%04X", c.code);
    const char* kind = refused_kind(c.code);
    RT_CHECK_AS(ConfigError, kind == nullptr, where, " '", escape_text(name), "' holds ", kind,
                " (", code, " at offset ", at,
                "), which would hide or break the name where it is shown: ", remedy);
    blank = blank && u_isUWhiteSpace(static_cast<UChar32>(c.code));
    at += c.bytes;
  }
  RT_CHECK_AS(ConfigError, !blank, where, " '", name, "' is blank (only white space): ", remedy);
}

std::string nfc(const std::string& text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer = icu::Normalizer2::getNFCInstance(status);
  std::string out;
  if (U_SUCCESS(status))
    normalizer->normalize(icu::UnicodeString::fromUTF8(text), status).toUTF8String(out);
  RT_CHECK(U_SUCCESS(status), "Unicode normalisation (ICU's NFC) failed: ", u_errorName(status));
  return out;
}

void check_distinct_class_names(const std::vector<std::string>& names, const std::string& where,
                                const std::string& remedy) {
  std::map<std::string, size_t> first;
  for (size_t i = 0; i < names.size(); ++i) {
    const auto [it, added] = first.emplace(nfc(names[i]), i);
    RT_CHECK_AS(ConfigError, added, where, " ", it->second, " '", escape_text(names[it->second]),
                "' and ", i, " '", escape_text(names[i]),
                "' are the same name (equal in Unicode's NFC form, as they show): ", remedy);
  }
}

}  // namespace ringtrain
