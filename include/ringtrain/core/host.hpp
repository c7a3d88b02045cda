#pragma once
// The machine a process runs on, for the record a run leaves (its summary): what it takes to
// tell where a result came from.
#include <string>

namespace ringtrain {

// This machine's host name (gethostname).
std::string host_name();

// The CPU model as /proc/cpuinfo names it ("Intel(R) Xeon(R) Platinum 8480+"); "unknown CPU"
// where the file or the line is missing.
std::string cpu_model();

}  // namespace ringtrain
