#pragma once
// JSON as the text every file and terminal output of ringtrain is written in.
#include <string>

#include <nlohmann/json.hpp>

namespace ringtrain {

// `value` as JSON text (`indent` as nlohmann::json::dump). A string that is not valid UTF-8 (a
// class name or a path another tool wrote) has its bad bytes replaced by U+FFFD: the output is
// written, and is valid JSON, rather than the write failing with the library's type_error.316.
// Any nlohmann::basic_json: an ordered_json keeps its order.
template <class Json>
std::string json_text(const Json& value, int indent = -1) {
  return value.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace ringtrain
