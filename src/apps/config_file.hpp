#pragma once
// Configuration files for `train` and `diagnose`: --config FILE sets any of their flags from
// TOML (`lr = 0.05`, `data = "cifar10.h5"`, `nesterov = true`: the flag's long name without
// the dashes), and the command line overrides the file. --print-config writes the effective
// configuration: every flag as the run uses it, which `--config` reads back.
#include <CLI/CLI.hpp>
#include <string>

namespace ringtrain::cli {

// Adds --config and --print-config to `cmd`; --print-config sets `print`.
void add_config_flags(CLI::App& cmd, bool& print);

// After the command line is parsed: sets each flag named in the --config file that the command
// line left out. Throws a ConfigError naming the file, and the key and value where one is at
// fault: a file that cannot be read, an unknown key, a [section], a key given twice or a value
// the flag refuses.
void apply_config_file(CLI::App& cmd);

struct EffectiveConfig {
  std::string toml;        // one `name = value` line per flag, after a comment line
  std::string unreadable;  // the first value the TOML cannot hold as it is, or ""
};

// Every configurable flag of `cmd` with the value its setting holds now (its default function),
// numbers exactly: what `cmd --config` reads back to repeat the run. Flags whose setting is
// unset (an empty value) and hidden ones the user did not give are left out.
EffectiveConfig effective_config(CLI::App& cmd);

}  // namespace ringtrain::cli
