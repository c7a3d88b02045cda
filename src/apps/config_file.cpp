#include "config_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "ringtrain/core/error.hpp"
#include "ringtrain/core/version.hpp"

namespace ringtrain::cli {
namespace {

std::vector<CLI::ConfigItem> read_config_file(const CLI::App& cmd, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  RT_CHECK_AS(
      ConfigError, fs::is_regular_file(status), "--config ", path, ": ",
      !fs::exists(status) ? "no such file" : (error ? error.message() : "not a regular file"));
  std::ifstream in(path, std::ios::binary);
  RT_CHECK_AS(ConfigError, in.is_open(), "--config ", path,
              ": cannot open: ", std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  RT_CHECK_AS(ConfigError, !in.bad(), "--config ", path,
              ": reading failed: ", std::strerror(errno));
  std::string toml = text.str();
  if (toml.rfind("\xEF\xBB\xBF", 0) == 0) toml.erase(0, 3);  // the UTF-8 mark some editors write
  std::istringstream lines(toml);
  return cmd.get_config_formatter()->from_config(lines);
}

// A key as an error shows it: control characters as '?', at most 60 bytes (a binary file).
std::string printable(std::string key) {
  if (key.size() > 60) key = key.substr(0, 60) + "...";
  for (char& c : key)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return key;
}

// The flag a key of the file sets, or a ConfigError saying why there is none.
CLI::Option* option_for(const CLI::App& cmd, const std::string& path, const CLI::ConfigItem& item) {
  const std::string where = str_cat("--config ", path, ": ");
  // CLI11 marks where a [section] opens and closes with items named "++" and "--".
  const bool section = item.name == "++" || item.name == "--";
  RT_CHECK_AS(ConfigError, item.parents.empty(), where,
              section ? str_cat("section [", join(item.parents, "."), "]")
                      : str_cat("key '", printable(item.fullname()), "'"),
              ": sections and dotted keys are not read; write each setting at the top of the "
              "file as a flag's long name without the dashes (lr = 0.1)");
  CLI::Option* opt = const_cast<CLI::App&>(cmd).get_option_no_throw("--" + item.name);
  RT_CHECK_AS(ConfigError, opt != nullptr, where, "unknown key '", printable(item.name),
              "': the keys are ", "the flags of `", cmd.get_name(),
              "` without the dashes (see ringtrain ", cmd.get_name(), " --help)");
  RT_CHECK_AS(ConfigError, opt->get_configurable(), where, "key '", item.name,
              "' cannot be set in a configuration file: give --", item.name,
              " on the command line");
  return opt;
}

void set_from_file(CLI::Option* opt, const CLI::Config& format, const std::string& path,
                   const CLI::ConfigItem& item) {
  try {
    if (opt->get_expected_min() == 0)
      opt->add_result(opt->get_flag_value(item.name, format.to_flag(item)));
    else
      opt->add_result(item.inputs);
    opt->run_callback();
  } catch (const CLI::Error& e) {
    throw ConfigError(str_cat("--config ", path, ": ", item.name, " = ", join(item.inputs, ", "),
                              ": ", e.what()));
  }
}

// The first way in which `line` does not read back as `name = value`, or "".
std::string read_back_problem(const CLI::Config& format, const std::string& line,
                              const std::string& name, const std::string& value) {
  std::istringstream in(line);
  const std::vector<CLI::ConfigItem> items = format.from_config(in);
  const bool same = items.size() == 1 && items[0].name == name &&
                    items[0].inputs == std::vector<std::string>{value};
  return same ? ""
              : str_cat("--", name, " '", value,
                        "' (a TOML value here cannot hold a '#', "
                        "a line break or both kinds of quotes)");
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
  const std::string path = config->as<std::string>();
  std::vector<CLI::Option*> given;  // on the command line
  for (CLI::Option* opt : cmd.get_options())
    if (opt->count() > 0) given.push_back(opt);
  std::set<const CLI::Option*> seen;
  for (const CLI::ConfigItem& item : read_config_file(cmd, path)) {
    CLI::Option* opt = option_for(cmd, path, item);
    RT_CHECK_AS(ConfigError, seen.insert(opt).second, "--config ", path, ": key '", item.name,
                "' sets --", opt->get_single_name(), ", which an earlier key of the file set");
    if (std::find(given.begin(), given.end(), opt) == given.end())
      set_from_file(opt, *cmd.get_config_formatter(), path, item);
  }
  // Note: two flags may set one setting (--model and --depth); running the command line's
  // callbacks again lets it win over the file there too.
  for (CLI::Option* opt : given) opt->run_callback();
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
    const std::string line =
        str_cat(opt->get_single_name(), " = ", CLI::detail::convert_arg_for_ini(value), "\n");
    if (config.unreadable.empty())
      config.unreadable =
          read_back_problem(*cmd.get_config_formatter(), line, opt->get_single_name(), value);
    config.toml += line;
  }
  return config;
}

}  // namespace ringtrain::cli
