#pragma once
// What every ringtrain command shares: flag checks that say what is wanted, enum flags, the
// cores this process may use, and the exit status of a failure.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <string>
#include <type_traits>
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
// A loader thread count, "auto" or "cores" (passed on as limits::kWorkersAuto and
// kWorkersFromCores); workers_text turns those back into their words.
CLI::Validator workers_or_auto();
std::string workers_text(int workers);
// A file path, never empty.
extern const CLI::Validator kFilePath;
// A folder path, never empty.
extern const CLI::Validator kFolderPath;

// The type CLI11 reads an option's value into: "INT", "UINT", "FLOAT", "TEXT", ... (the start
// of its type name, before what its checks describe).
std::string value_type(const CLI::Option& opt);

// Makes every option of `app` and its subcommands refuse a value holding a control character
// (a newline, a NUL from a TOML string), and every whole-number option read decimal digits
// only, also with leading zeros ("010" is 10); "0x", "0o" and "0b" numbers are refused. Called
// once, after every option is added.
void check_every_value(CLI::App& app);

// A floating-point setting's text, checked before its range: decimal only ("0x10", which C reads
// as 16, is refused), never a nonzero number that the setting's type (32-bit when `single`)
// holds as 0 (1e-50), and a zero written as "0" (-0 would not read back from a configuration).
CLI::Validator decimal_real(bool single);

// Every flag bound to a setting also says what the setting holds now (its default function,
// which --help shows as the default and a configuration file is written from: config_file.hpp).

// An option bound to `value`, whose numbers are written exactly (the shortest text that reads
// back as the same value, where CLI11 keeps 6 digits), so that a configuration file repeats a
// run bit for bit. With `zero_is_unset`, 0 stands for "not given" (outside the flag's range)
// and is written as nothing.
template <class T>
CLI::Option* add_setting(CLI::App& cmd, const std::string& flag, T& value, const std::string& help,
                         bool zero_is_unset = false) {
  CLI::Option* opt = cmd.add_option(flag, value, help)->default_function([&value, zero_is_unset] {
    if constexpr (std::is_arithmetic_v<T>)
      return zero_is_unset && value == 0 ? std::string() : fmt::format("{}", value);
    else
      return std::string(value);
  });
  if constexpr (std::is_floating_point_v<T>) opt->transform(decimal_real(std::is_same_v<T, float>));
  return opt;
}

// A flag that sets `value`, to false for a "!--no-x" flag; it holds "true" while `value` is
// what the flag sets.
CLI::Option* add_switch(CLI::App& cmd, const std::string& flag, bool& value,
                        const std::string& help);

// A flag whose value is one of an enum's names, parsed into the enum.
template <class E>
CLI::Option* add_choice(CLI::App& cmd, const std::string& flag, E& value, const std::string& help) {
  std::vector<std::string> names;
  for (const auto& entry : names_of<E>()) names.push_back(entry.first);
  return cmd
      .add_option_function<std::string>(
          flag, [&value, flag](const std::string& text) { value = parse<E>(flag, text); }, help)
      ->check(CLI::IsMember(names))
      ->default_function([&value] { return to_string(value); })
      ->capture_default_str();
}

// A usage error: rank 0 prints it for every rank of the job; the status to exit with.
int parse_failure(const CLI::App& app, const CLI::ParseError& e);

// The exit status of a failure (docs: ringtrain --help and include/ringtrain/core/exit_codes.hpp).
int exit_status(const std::exception& e);

}  // namespace ringtrain::cli
