#include "config_file.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "cli.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/core/version.hpp"

namespace ringtrain::cli {
namespace {

// A text as an error shows it: control characters as '?', at most `max` bytes (a binary file).
std::string printable(std::string text, size_t max = 80) {
  if (text.size() > max) text = text.substr(0, max) + "...";
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return text;
}

// The --config file: its lines (for the messages) and its TOML.
struct ConfigFile {
  std::string path;
  std::vector<std::string> lines;
  toml::table table;

  // "--config PATH:LINE: TEXT OF THE LINE: " (the line as the user wrote it).
  std::string where(toml::source_index line) const {
    const std::string text = line >= 1 && line <= lines.size() ? lines[line - 1] : "";
    return str_cat("--config ", path, ":", line, ": ", printable(text), ": ");
  }
};

std::string read_text(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  // Note: a link loop (ELOOP) leaves the status unknown, not "not found": the system names it.
  RT_CHECK_AS(ConfigError, fs::is_regular_file(status), "--config ", path, ": ",
              status.type() == fs::file_type::not_found ? "no such file"
              : error ? str_cat(error.message(), ": check the path and its links")
                      : "not a regular file");
  std::ifstream in(path, std::ios::binary);
  RT_CHECK_AS(ConfigError, in.is_open(), "--config ", path,
              ": cannot open: ", std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  RT_CHECK_AS(ConfigError, !in.bad(), "--config ", path,
              ": reading failed: ", std::strerror(errno));
  return text.str();
}

// Note: toml++ recurses once for each part of a dotted key or a [section] name: some tens of
// thousands of parts overflow the stack. The settings are flat, so a file is refused before it is
// parsed where a name has more parts than any file should (its inline tables and arrays toml++
// itself nests at most 256 deep).
constexpr int kMaxNameParts = 8;

// The index of the last character of the string that opens at `i` (a quote), counting the lines
// it spans into `line`; an unterminated one ends before its line does.
size_t string_end(std::string_view text, size_t i, size_t& line) {
  const std::string_view triple = text[i] == '"' ? "\"\"\"" : "'''";
  const std::string_view close = text.compare(i, 3, triple) == 0 ? triple : triple.substr(0, 1);
  for (size_t j = i + close.size(); j < text.size(); ++j) {
    if (text[j] == '\n') {
      if (close.size() == 1) return j - 1;
      ++line;
    } else if (text[j] == '\\' && close[0] == '"') {
      ++j;
      if (j < text.size() && text[j] == '\n') ++line;
    } else if (text.compare(j, close.size(), close) == 0) {
      return j + close.size() - 1;
    }
  }
  return text.size();
}

// The line (from 1) of the first key or [section] name of more than kMaxNameParts parts, or 0.
// Only a name has more than one dot between separators: a number or a date has one at most.
size_t deep_name_line(std::string_view text) {
  size_t line = 1;
  int parts = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"' || c == '\'') {
      i = string_end(text, i, line);
    } else if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '.') {
      if (++parts > kMaxNameParts) return line;
    } else if (std::string_view(",=[]{}\n").find(c) != std::string_view::npos) {
      parts = 1;
      if (c == '\n') ++line;
    }
  }
  return 0;
}

ConfigFile read_config_file(const std::string& path) {
  ConfigFile file{path, {}, {}};
  const std::string text = read_text(path);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t start = line.find_first_not_of(" \t");
    file.lines.push_back(start == std::string::npos ? "" : line.substr(start));
  }
  const size_t deep = deep_name_line(text);
  RT_CHECK_AS(ConfigError, deep == 0, file.where(deep), "a key or [section] name of more than ",
              kMaxNameParts,
              " dotted parts: sections and dotted keys are not read; write each "
              "setting at the top of the file as a flag's long name without the dashes (lr = 0.1)");
  try {
    file.table = toml::parse(std::string_view(text), std::string_view(path));
  } catch (const toml::parse_error& e) {
    throw ConfigError(str_cat(file.where(e.source().begin.line),
                              printable(std::string(e.description()), 200),
                              " (the file is TOML: https://toml.io)"));
  }
  return file;
}

// What a flag takes from TOML: a switch a boolean, a text flag a string; a number flag a number
// or a string, which it reads as on the command line (--workers "auto", --model "resnet50", a
// seed beyond TOML's integers).
enum class Kind { boolean, integer, number, text };

Kind kind_of(const CLI::Option& opt) {
  if (opt.get_expected_min() == 0) return Kind::boolean;
  const std::string base = value_type(opt);
  if (base == "INT" || base == "UINT") return Kind::integer;
  if (base == "FLOAT") return Kind::number;
  return Kind::text;
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::boolean:
      return "a boolean (true or false)";
    case Kind::integer:
      return "a whole number";
    case Kind::number:
      return "a number";
    case Kind::text:
      return "a string (in double quotes)";
  }
  return "";
}

// The text a flag of `kind` reads for the TOML value `node`, as from the command line; nothing
// when the flag does not take that type.
std::optional<std::string> flag_text(Kind kind, const toml::node& node) {
  if (const auto* b = node.as_boolean())
    return kind == Kind::boolean ? std::optional<std::string>(b->get() ? "true" : "false")
                                 : std::nullopt;
  if (kind == Kind::boolean) return std::nullopt;
  if (const auto* s = node.as_string()) return s->get();
  if (kind == Kind::text) return std::nullopt;
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  const auto* f = node.as_floating_point();
  if (f && kind == Kind::number) return fmt::format("{}", f->get());
  return std::nullopt;
}

// One `key = value` of the file, with the line of its key.
struct Item {
  std::string key;
  const toml::node* node;
  toml::source_index line;
};

std::vector<Item> items_in_file_order(const toml::table& table) {
  std::vector<Item> items;
  for (const auto& [key, node] : table)
    items.push_back({std::string(key.str()), &node, key.source().begin.line});
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.line < b.line; });
  return items;
}

// The flag a key of the file sets, or a ConfigError saying why there is none.
CLI::Option* option_for(const CLI::App& cmd, const ConfigFile& file, const Item& item) {
  const std::string where = file.where(item.line);
  if (const toml::table* section = item.node->as_table()) {
    const std::string inner = section->empty() ? "" : "." + std::string(section->begin()->first);
    throw ConfigError(str_cat(where, "key '", printable(item.key + inner),
                              "' is in a [section] or dotted: sections and dotted keys are not "
                              "read; write each setting at the top of the file as a flag's long "
                              "name without the dashes (lr = 0.1)"));
  }
  CLI::Option* opt = const_cast<CLI::App&>(cmd).get_option_no_throw("--" + item.key);
  RT_CHECK_AS(ConfigError, opt != nullptr, where, "unknown key '", printable(item.key),
              "': the keys are the flags of `", cmd.get_name(),
              "` without the dashes (see ringtrain ", cmd.get_name(), " --help)");
  RT_CHECK_AS(ConfigError, opt->get_configurable(), where, "key '", item.key,
              "' cannot be set in a configuration file: give --", item.key, " on the command line");
  return opt;
}

// Refuses a key whose flag, or a flag excluding it (--model and --depth set one setting), an
// earlier key of the file set.
void check_unset(const ConfigFile& file, const Item& item, CLI::Option* opt,
                 std::map<const CLI::Option*, Item>& set_by) {
  std::vector<const CLI::Option*> same = {opt};
  for (const CLI::Option* other : opt->get_excludes()) same.push_back(other);
  for (const CLI::Option* o : same) {
    const auto earlier = set_by.find(o);
    RT_CHECK_AS(ConfigError, earlier == set_by.end(), file.where(item.line), "keys '",
                earlier->second.key, "' (line ", earlier->second.line, ") and '", item.key,
                "' (line ", item.line, ") set the same setting: keep one of them");
  }
  set_by.emplace(opt, item);
}

// The text `opt` reads for the key's value, or a ConfigError naming the type it takes.
std::string text_for(const CLI::Option& opt, const ConfigFile& file, const Item& item) {
  const Kind kind = kind_of(opt);
  const auto* integer = item.node->as_integer();
  RT_CHECK_AS(ConfigError, integer == nullptr || integer->flags() == toml::value_flags::none,
              file.where(item.line), "key '", item.key,
              "' is not written in decimal digits (TOML's 0x, 0o and 0b integers are not read): "
              "write it in decimal");
  const std::optional<std::string> text = flag_text(kind, *item.node);
  RT_CHECK_AS(ConfigError, text.has_value(), file.where(item.line), "key '", item.key, "' takes ",
              kind_name(kind), ", not a TOML ", item.node->type());
  return *text;
}

void set_from_file(CLI::Option* opt, const ConfigFile& file, const Item& item,
                   const std::string& text) {
  try {
    if (opt->get_expected_min() == 0)
      opt->add_result(opt->get_flag_value(item.key, text));
    else
      opt->add_result(text);
    opt->run_callback();
  } catch (const CLI::Error& e) {
    throw ConfigError(file.where(item.line) + e.what());
  }
}

// Whether `value` is a TOML number (an integer or a float) as it stands.
bool is_toml_number(const std::string& value) {
  try {
    const toml::table t = toml::parse(str_cat("v = ", value));
    return t.size() == 1 && t["v"].is_number();
  } catch (const toml::parse_error&) {
    return false;
  }
}

// `value`, what a flag of `kind` holds, as a TOML value: switches and numbers as they are, the
// rest a string in double quotes (with TOML's escapes).
std::string toml_value(Kind kind, const std::string& value) {
  if (kind == Kind::boolean || (kind != Kind::text && is_toml_number(value))) return value;
  std::ostringstream out;
  out << toml::toml_formatter{toml::value<std::string>(value),
                              toml::format_flags::allow_unicode_strings};
  return out.str();
}

// The first way in which `line` does not read back as --name `value`, or "".
std::string read_back_problem(Kind kind, const std::string& line, const std::string& name,
                              const std::string& value) {
  std::string problem;
  try {
    const toml::table t = toml::parse(line);
    const toml::node* node = t.get(name);
    const std::optional<std::string> text = node ? flag_text(kind, *node) : std::nullopt;
    if (t.size() != 1 || text != value) problem = "it does not read back as written";
  } catch (const toml::parse_error& e) {
    problem = std::string(e.description());
  }
  return problem.empty() ? "" : str_cat("--", name, " '", value, "' (as TOML: ", problem, ")");
}

}  // namespace

void add_config_flags(CLI::App& cmd, bool& print) {
  cmd.set_config("--config", "",
                 "read flags from this TOML file (`lr = 0.05`, one flag a line, named without "
                 "the dashes); flags on the command line override it");
  cmd.add_flag("--print-config", print,
               "write the effective configuration (every flag as this run would use it) as TOML "
               "to stdout and exit")
      ->configurable(false);
}

void apply_config_file(CLI::App& cmd) {
  const CLI::Option* config = cmd.get_config_ptr();
  if (config == nullptr || config->count() == 0) return;
  const ConfigFile file = read_config_file(config->as<std::string>());
  // Note: a flag on the command line wins over the file's key for it and over the file's keys
  // for the flags it excludes (--model resnet18 over the file's depth = 50).
  std::vector<const CLI::Option*> given;
  for (const CLI::Option* opt : cmd.get_options())
    if (opt->count() > 0) {
      given.push_back(opt);
      for (const CLI::Option* other : opt->get_excludes()) given.push_back(other);
    }
  std::map<const CLI::Option*, Item> set_by;
  for (const Item& item : items_in_file_order(file.table)) {
    CLI::Option* opt = option_for(cmd, file, item);
    check_unset(file, item, opt, set_by);
    const std::string text = text_for(*opt, file, item);  // checked also where overridden
    if (std::find(given.begin(), given.end(), opt) == given.end())
      set_from_file(opt, file, item, text);
  }
}

EffectiveConfig effective_config(CLI::App& cmd) {
  EffectiveConfig config;
  config.toml = str_cat("# ringtrain ", RINGTRAIN_VERSION, ": the effective configuration ",
                        "(ringtrain ", cmd.get_name(), " --config FILE repeats it)\n");
  for (CLI::Option* opt : cmd.get_options()) {
    const bool hidden = opt->get_group().empty();
    if (!opt->get_configurable() || (hidden && opt->count() == 0)) continue;
    opt->capture_default_str();
    const std::string& value = opt->get_default_str();
    // A switch is always true or false: empty, it was declared without add_switch and would be
    // missing from every stored configuration.
    RT_CHECK(!value.empty() || opt->get_expected_min() > 0, "the switch --", opt->get_single_name(),
             " does not say its state: declare it with add_switch");
    if (value.empty()) continue;
    const Kind kind = kind_of(*opt);
    const std::string line = str_cat(opt->get_single_name(), " = ", toml_value(kind, value), "\n");
    if (config.unreadable.empty())
      config.unreadable = read_back_problem(kind, line, opt->get_single_name(), value);
    config.toml += line;
  }
  return config;
}

}  // namespace ringtrain::cli
