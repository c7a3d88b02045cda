#pragma once
// Class names as datasets and checkpoints store them: UTF-8 text that shows as it is, so that
// every JSON writer takes them, each shows on one line of `inspect`, whole, and two names that
// look the same are the same name.
#include <string>
#include <vector>

namespace ringtrain {

// `text` with every byte that is not printable UTF-8 text written as \xNN: bytes that are not
// valid UTF-8, control characters (a newline is \x0a), format characters (zero-width, byte
// order and direction marks), line and paragraph separators, and noncharacters.
std::string escape_text(const std::string& text);

// Throws a ConfigError when `name` cannot be a class name: empty or blank (white space only),
// not valid UTF-8 (an overlong form or a surrogate included), or holding a character escape_text
// escapes. The message is `where`, the name quoted with those bytes escaped, the first bad byte
// or character and its offset, and `remedy`.
void check_class_name(const std::string& name, const std::string& where, const std::string& remedy);

// `text` (valid UTF-8) in Unicode's normalisation form C: composed, so that the same letters
// typed as one code point or as a letter and combining marks are the same bytes.
std::string nfc(const std::string& text);

// Throws a ConfigError naming `where`, both names and their indices, and `remedy` when two of
// `names` are equal in NFC form: they look the same and would be two classes.
void check_distinct_class_names(const std::vector<std::string>& names, const std::string& where,
                                const std::string& remedy);

}  // namespace ringtrain
