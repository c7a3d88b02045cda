#pragma once
// `ringtrain data import-cifar`: the official CIFAR-10 archives, cifar-10-python.tar.gz and
// cifar-10-binary.tar.gz, read in place (libarchive) into the HDF5 dataset schema.
#include <cstdint>
#include <functional>
#include <string>

#include "ringtrain/data/dataset.hpp"

namespace ringtrain {

// The MD5s the CIFAR-10 page publishes for its two archives.
constexpr const char* kCifarPythonMd5 = "c58f30108f718f92721af3b95e74349a";
constexpr const char* kCifarBinaryMd5 = "c32a1d4ab5d03f1284b67883e8d87530";

enum class CifarFormat { python, binary };

struct CifarImportConfig {
  std::string archive, out;
  bool force = false;  // replace an existing `out`
  int gzip = 0;
  // Told each line worth showing the user: a member read (progress), an MD5 that is not the
  // published one.
  std::function<void(const std::string& line)> report;
};

// What import_cifar10_archive wrote, for its summary.
struct CifarImportSummary {
  CifarFormat format = CifarFormat::python;
  int64_t train = 0, test = 0;
  int classes = 0;
  std::string md5;
  bool md5_published = false;
};

// Reads an archive of either format, told apart by its members: cifar-10-batches-py/
// data_batch_1..5, test_batch and batches.meta (pickles, read by read_pickle: a dict of `data`,
// uint8 [N, 3072], and `labels`; batches.meta's `label_names`), or cifar-10-batches-bin/
// data_batch_1..5.bin, test_batch.bin (records of cifar10_bin.hpp) and batches.meta.txt. Other
// members are passed over. Pixels become HWC; train is batches 1 to 5 in order. Errors name
// the archive and the member: not a tar.gz, truncated, a member missing or twice, a corrupt
// pickle, a refused global, a label outside [0, 10). `report` (may be empty) hears each
// member read.
Dataset read_cifar10_archive(const std::string& archive, CifarFormat& format,
                             const std::function<void(const std::string&)>& report = {});

// Refuses an `out` that exists (unless force) or cannot be created, takes the archive's MD5
// and reports when it is neither published one (a modified or partial download), reads the
// archive, and writes `out` with the provenance attributes (docs/data.md): importer
// "ringtrain data import-cifar", source_path (the archive's absolute path), source_md5,
// source_md5_published ("yes" or "no"), importer_version and content_xxh64.
CifarImportSummary import_cifar10_archive(const CifarImportConfig& config);

}  // namespace ringtrain
