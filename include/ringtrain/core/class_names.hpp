#pragma once
// Class names as datasets and checkpoints store them: UTF-8 text without control characters, so
// that every JSON writer takes them and each shows on one line of `inspect`, whole.
#include <string>

namespace ringtrain {

// `text` with every byte that is not printable UTF-8 text written as \xNN: bytes that are not
// valid UTF-8, and control characters (U+0000 to U+001F, U+007F to U+009F; a newline is \x0a).
std::string escape_text(const std::string& text);

// Throws an Error when `name` cannot be a class name: empty, not valid UTF-8 (an overlong form
// or a surrogate included), or holding a control character. The message is `where`, the name
// quoted with those bytes escaped (escape_text), the first bad byte or character and its
// offset, and `remedy`.
void check_class_name(const std::string& name, const std::string& where, const std::string& remedy);

}  // namespace ringtrain
