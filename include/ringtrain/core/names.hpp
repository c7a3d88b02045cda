#pragma once
// The names of a setting's values, as the command line and the logs spell them. Each enum of a
// setting specialises names_of<E>() once (a table beside the enum); the CLI checks flags
// against that table and parses them into the enum, so nothing below the configuration ever
// compares a string, and to_string gives the same spelling back.
#include <string>
#include <utility>
#include <vector>

#include "ringtrain/core/error.hpp"

namespace ringtrain {

template <class E>
using NameTable = std::vector<std::pair<std::string, E>>;

// Specialised for every enum of a setting.
template <class E>
const NameTable<E>& names_of();

template <class E>
const std::string& to_string(E value) {
  for (const auto& [name, v] : names_of<E>())
    if (v == value) return name;
  throw Error(str_cat("to_string: enum value ", static_cast<int>(value), " has no name"));
}

// Throws a ConfigError naming `setting` and the accepted names when `text` is none of them.
template <class E>
E parse(const std::string& setting, const std::string& text) {
  std::string accepted;
  for (const auto& [name, v] : names_of<E>()) {
    if (name == text) return v;
    accepted += (accepted.empty() ? "" : ", ") + name;
  }
  throw ConfigError(
      str_cat("config: ", setting, " must be one of ", accepted, "; got '", text, "'"));
}

}  // namespace ringtrain
