#include "cli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <thread>

#include "ringtrain/core/error.hpp"
#include "ringtrain/core/exit_codes.hpp"
#include "ringtrain/distributed/world.hpp"
#include "ringtrain/run_config/config.hpp"

namespace ringtrain::cli {
namespace {

std::string show_number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

// The number `text` holds as a whole, as strtod reads it ("0x10", "inf" and "nan" too).
std::optional<double> read_number(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') return std::nullopt;
  return v;
}

size_t skip_digits(const std::string& text, size_t i) {
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  return i;
}

// Whether `text` is a number in decimal: [+-] digits [. digits] [e [+-] digits], a digit before
// or after the point.
bool is_decimal(const std::string& text) {
  size_t i = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
  const size_t whole_end = skip_digits(text, i);
  size_t digits = whole_end - i;
  i = whole_end;
  if (i < text.size() && text[i] == '.') {
    const size_t fraction_end = skip_digits(text, i + 1);
    digits += fraction_end - (i + 1);
    i = fraction_end;
  }
  if (digits == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    const size_t sign = i + 1 < text.size() && (text[i + 1] == '+' || text[i + 1] == '-') ? 1 : 0;
    const size_t exponent_end = skip_digits(text, i + 1 + sign);
    if (exponent_end == i + 1 + sign) return false;
    i = exponent_end;
  }
  return i == text.size();
}

std::string not_decimal(const std::string& value) {
  return str_cat("'", value, "' is not a decimal number: write it in decimal digits");
}

// A finite number in [lo, hi] ((lo, hi] when lo_open), whole for an integer flag. CLI11's own
// checks print the whole double range and let NaN through; this says what is wanted.
CLI::Validator bounded(double lo, double hi, bool whole, bool lo_open, const std::string& hint) {
  const std::string range =
      str_cat(lo_open ? "(" : "[", show_number(lo), ", ", show_number(hi), "]");
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        const std::optional<double> number = read_number(value);
        if (!number) return "'" + value + "' is not a number";
        const double v = *number;
        if (!std::isfinite(v)) return "must be a finite number in " + range + ", got " + value;
        if (!is_decimal(value)) return not_decimal(value);
        if (whole && v != std::floor(v)) return "must be a whole number, got " + value;
        if (lo_open ? v <= lo : v < lo)
          return str_cat("must be ", lo_open ? "> " : ">= ", show_number(lo), hint, ", got ",
                         value);
        if (v > hi) return str_cat("must be <= ", show_number(hi), hint, ", got ", value);
        return "";
      },
      range);
}
}  // namespace

CLI::Validator whole(double lo, double hi, const std::string& hint) {
  return bounded(lo, hi, true, false, hint);
}
CLI::Validator real(double lo, double hi) {
  return bounded(lo, hi, false, false, "");
}
CLI::Validator positive(double hi) {
  return bounded(0, hi, false, true, "");
}

// CLI11 reads "-1" as 2^64 - 1 for an unsigned flag: only digits are a seed.
const CLI::Validator kSeed(
    [](std::string& value) -> std::string {
      const std::string max = "18446744073709551615";
      const bool digits =
          !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
      if (digits && (value.size() < max.size() || (value.size() == max.size() && value <= max)))
        return "";
      return "must be a whole number in [0, 2^64), got " + value;
    },
    "[0, 2^64)");

CLI::Validator workers_or_auto() {
  const CLI::Validator count = whole(0, limits::kMaxWorkers);
  return CLI::Validator(
      [count](std::string& value) -> std::string {
        std::string word = value;
        for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (word == "auto" || word == "cores") {
          value = std::to_string(word == "auto" ? limits::kWorkersAuto : limits::kWorkersFromCores);
          return "";
        }
        if (!read_number(value)) return str_cat("'", value, "' is not a number, auto or cores");
        return count(value);
      },
      str_cat("[0, ", limits::kMaxWorkers, "]|auto|cores"));
}

std::string workers_text(int workers) {
  if (workers == limits::kWorkersAuto) return "auto";
  if (workers == limits::kWorkersFromCores) return "cores";
  return std::to_string(workers);
}

// A file path, never empty: an empty --data would silently mean synthetic data (leaving the flag
// out is how to ask for that).
const CLI::Validator kFilePath(
    [](std::string& value) -> std::string {
      return value.empty() ? "an empty path: name a file" : "";
    },
    "FILE");

std::string value_type(const CLI::Option& opt) {
  const std::string type = opt.get_type_name();
  return type.substr(0, type.find(':'));
}

// Note: CLI11 reads whole numbers as C does with base 0: "010" is octal 8, "08" an error and
// "0x10" is 16. Dropping the leading zeros leaves only decimal digits for it to read.
const CLI::Validator kDecimal(
    [](std::string& value) -> std::string {
      const size_t sign = value.size() > 1 && (value[0] == '-' || value[0] == '+') ? 1 : 0;
      const std::string digits = value.substr(sign);
      if (digits.size() > 1 && digits[0] == '0' &&
          std::string("xXoObB").find(digits[1]) != std::string::npos)
        return str_cat("'", value, "' is not a decimal number: write it in decimal digits");
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
        return "";  // not digits: the flag's own checks read it ("auto", "resnet50")
      const size_t first = std::min(digits.find_first_not_of('0'), digits.size() - 1);
      value = value.substr(0, sign) + digits.substr(first);
      return "";
    },
    "");

// Note: a TOML string may hold any control character ("data.h5\u0000x"), which a path or a name
// never needs: a NUL would cut the path short where the system reads it.
const CLI::Validator kNoControlCharacters(
    [](std::string& value) -> std::string {
      for (size_t i = 0; i < value.size(); ++i) {
        const auto c = static_cast<unsigned char>(value[i]);
        if (c < 0x20 || c == 0x7f)
          return fmt::format(
              "holds a control character (byte 0x{:02x} at offset {}): remove it (no path, name "
              "or number has one)",
              c, i);
      }
      return "";
    },
    "");

void check_every_value(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_expected_min() == 0) continue;  // a switch: true or false
    const std::string type = value_type(*opt);
    // Note: a transform runs before the checks added earlier, which then see the decimal text.
    if (type == "INT" || type == "UINT") opt->transform(kDecimal);
    opt->transform(kNoControlCharacters);
  }
  for (CLI::App* sub : app.get_subcommands({})) check_every_value(*sub);
}

CLI::Validator decimal_real(bool single) {
  return CLI::Validator(
      [single](std::string& value) -> std::string {
        const std::optional<double> number = read_number(value);
        if (!number || !std::isfinite(*number)) return "";  // the flag's range check says why
        if (!is_decimal(value)) return not_decimal(value);
        const std::string mantissa = value.substr(0, value.find_first_of("eE"));
        if (mantissa.find_first_of("123456789") == std::string::npos) {
          value = "0";  // -0 and 0.0e5 alike: the setting holds +0, as it is written back
          return "";
        }
        const double v = *number;
        const bool lost = single ? std::fabs(v) < 1 && static_cast<float>(v) == 0 : v == 0;
        if (lost)
          return str_cat("'", value, "' is too close to 0 for this setting (a ",
                         single ? "32" : "64", "-bit float holds it as 0): write a larger number");
        return "";
      },
      "");
}

const CLI::Validator kFolderPath(
    [](std::string& value) -> std::string {
      return value.empty() ? "an empty path: name a folder" : "";
    },
    "DIR");

CLI::Option* add_switch(CLI::App& cmd, const std::string& flag, bool& value,
                        const std::string& help) {
  const bool sets = flag.front() != '!';
  return cmd.add_flag(flag, value, help)->default_function([&value, sets] {
    return std::string(value == sets ? "true" : "false");
  });
}

// Every rank of a job parses the same command line and fails alike: rank 0 prints for all.
int parse_failure(const CLI::App& app, const CLI::ParseError& e) {
  if (launch_rank() == 0) {
    app.exit(e);
  } else if (e.get_exit_code() != 0) {
    // Note: mpirun ends the job when its first process fails; the others wait a moment so that
    // rank 0's message is out by then.
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return e.get_exit_code() == 0 ? exit_code::kOk : exit_code::kUsage;
}

int exit_status(const std::exception& e) {
  if (dynamic_cast<const ConfigError*>(&e)) return exit_code::kUsage;
  if (dynamic_cast<const DivergedError*>(&e)) return exit_code::kDiverged;
  return exit_code::kError;
}

}  // namespace ringtrain::cli
