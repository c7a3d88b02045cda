#pragma once
// What every ringtrain command shares: flag checks that say what is wanted, enum flags, the
// cores this process may use, and the exit status of a failure.
#include <CLI/CLI.hpp>
#include <exception>
#include <string>
#include <vector>

#include "ringtrain/core/names.hpp"

namespace ringtrain::cli {

// A finite number in [lo, hi], whole for whole(), > 0 for positive(); CLI11's own checks print
// the whole double range and let NaN through.
CLI::Validator whole(double lo, double hi, const std::string& hint = "");
CLI::Validator real(double lo, double hi);
CLI::Validator positive(double hi);
// A seed: only digits, below 2^64.
extern const CLI::Validator kSeed;
// A thread count, or "auto" (passed on as -1).
CLI::Validator workers_or_auto();
// A file path, never empty.
extern const CLI::Validator kFilePath;

// A flag whose value is one of an enum's names, parsed into the enum.
template <class E>
CLI::Option* add_choice(CLI::App& cmd, const std::string& flag, E& value, const std::string& help) {
  std::vector<std::string> names;
  for (const auto& entry : names_of<E>()) names.push_back(entry.first);
  return cmd
      .add_option_function<std::string>(
          flag, [&value, flag](const std::string& text) { value = parse<E>(flag, text); }, help)
      ->check(CLI::IsMember(names))
      ->default_str(to_string(value));
}

// The cores this process may run on (its CPU affinity), at least 1.
int available_cores();

// A usage error: rank 0 prints it for every rank of the job; the status to exit with.
int parse_failure(const CLI::App& app, const CLI::ParseError& e);

// The exit status of a failure (docs: ringtrain --help and include/ringtrain/core/exit_codes.hpp).
int exit_status(const std::exception& e);

}  // namespace ringtrain::cli
