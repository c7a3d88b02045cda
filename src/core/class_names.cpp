#include "ringtrain/core/class_names.hpp"

#include <cstdint>
#include <cstdio>

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

bool is_control(uint32_t code) {
  return code < 0x20 || (code >= 0x7F && code <= 0x9F);
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
      out += c.bytes == 0 || is_control(c.code) ? hex_byte(static_cast<unsigned char>(text[i]))
                                                : std::string(1, text[i]);
    at += bytes;
  }
  return out;
}

void check_class_name(const std::string& name, const std::string& where,
                      const std::string& remedy) {
  RT_CHECK(!name.empty(), where, " is an empty class name: ", remedy);
  for (size_t at = 0; at < name.size();) {
    const Utf8Char c = utf8_char(name, at);
    RT_CHECK(c.bytes > 0, where, " '", escape_text(name), "' is not valid UTF-8 (byte ",
             hex_byte(static_cast<unsigned char>(name[at])), " at offset ", at,
             "): class names are stored as UTF-8 text: ", remedy);
    char code[16];
    std::snprintf(code, sizeof code, "U+%04X", c.code);
    RT_CHECK(!is_control(c.code), where, " '", escape_text(name), "' holds a control character (",
             code, " at offset ", at, "), which would break the lines that show it: ", remedy);
    at += c.bytes;
  }
}

}  // namespace ringtrain
