#pragma once
#include <string>

namespace ringtrain {

// What identifies a dataset file by its content, not its path: XXH64 (16 hex digits) of both
// splits' shapes and dtypes, all labels and a fixed sample of images (the first, the last and
// 14 evenly spaced between them, per split). A moved or copied file keeps it; another file at
// the same path changes it. Reads the file itself (a few milliseconds for CIFAR-10); errors
// name the file and the dataset.
std::string data_fingerprint(const std::string& path);

}  // namespace ringtrain
