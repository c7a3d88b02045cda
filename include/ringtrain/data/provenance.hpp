#pragma once
// Where a data file came from: the text attributes every ringtrain writer stores beside the
// data (docs/data.md), and the line that shows them.
#include <cstdint>
#include <string>

#include "ringtrain/data/dataset.hpp"
#include "ringtrain/data/hdf5_io.hpp"

namespace ringtrain {

// XXH64 of the train images (NHWC bytes), train labels (int32 little-endian), test images and
// test labels as stored, each hash seeded with the one before (the first with 0).
uint64_t content_hash(const Dataset& data);

// What a writer records about its source; empty fields are not written.
struct Provenance {
  std::string importer;              // the command, e.g. "ringtrain data import-cifar"
  std::string source_path;           // a source file's absolute path (an archive)
  std::string source_dir;            // a source folder's absolute path
  std::string source_md5;            // the source file's MD5, 32 hex digits
  std::string source_md5_published;  // "yes" when source_md5 is the published one, else "no"
  std::string generator, seed;       // a generated dataset: how, and from which seed
};

// The attributes of `p`, then importer_version (this build's version) and content_xxh64 (16 hex
// digits of content_hash(data)), appended to `attributes`.
void add_provenance(const Provenance& p, const Dataset& data, FileAttributes& attributes);

// One line naming the file and what its attributes say about where it came from, e.g. "data:
// data/cifar10.h5, imported by ringtrain data import-cifar 0.1.0 from /x/cifar-10-python.tar.gz
// (md5 c58f..., the published one), content xxh64 0123..."; a file without them says so.
std::string describe_provenance(const Dataset& data, const std::string& path);

}  // namespace ringtrain
