// `data import-cifar`: small archives in the official layouts, written at test time by
// tests/support/make_cifar_archives.py (Python 2's cPickle layout assembled opcode by opcode,
// numpy's own pickles at protocols 2 and 4, binary records), import to exactly the pixels numpy's
// transpose of the CHW rows gives, their labels and class names, with the provenance recorded;
// broken archives are refused naming the archive and the member.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "ringtrain/core/error.hpp"
#include "ringtrain/core/hash.hpp"
#include "ringtrain/core/version.hpp"
#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/data/provenance.hpp"
#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/import/cifar10_archive.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

namespace fs = std::filesystem;

#define EXPECT_MENTIONS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

// Python with numpy, or why the test cannot run (/usr/bin/python3: the system's, which has it).
std::string python_problem() {
  static const bool ok = std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
  return ok ? "" : "no /usr/bin/python3 with numpy to write the test archives";
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = test::temp_path("cifar_archive_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Writes an archive of `format` (py2, p2, p4, bin) and `variant` (ok or a broken member).
std::string make_archive(const fs::path& dir, const std::string& format, const std::string& variant,
                         const std::string& expected = "") {
  const std::string out = (dir / (format + "_" + variant + ".tar.gz")).string();
  std::string command = "/usr/bin/python3 " RINGTRAIN_SOURCE_DIR
                        "/tests/support/make_cifar_archives.py " +
                        format + " " + variant + " '" + out + "'";
  if (!expected.empty()) command += " --expected '" + expected + "'";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return out;
}

std::string slurp(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string attribute(const Dataset& d, const std::string& name) {
  for (const auto& [key, value] : d.attributes)
    if (key == name) return value;
  return "(absent)";
}

// The file's MD5 by the system's md5sum, an implementation apart from ours.
std::string md5sum(const std::string& file) {
  const std::string command = "md5sum '" + file + "'";
  FILE* pipe = popen(command.c_str(), "r");
  char digest[33] = "";
  EXPECT_EQ(std::fscanf(pipe, "%32s", digest), 1);
  pclose(pipe);
  return digest;
}

std::string import_error(const CifarImportConfig& c) {
  try {
    import_cifar10_archive(c);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(CifarArchive, EachFormatImportsPixelExactWithItsProvenance) {
  if (!python_problem().empty()) GTEST_SKIP() << python_problem();
  const fs::path dir = fresh_dir("formats");
  const fs::path expected = dir / "expected";
  for (const std::string format : {"py2", "p2", "p4", "bin"}) {
    SCOPED_TRACE(format);
    CifarImportConfig c;
    c.archive = make_archive(dir, format, "ok", expected.string());
    c.out = (dir / (format + ".h5")).string();
    std::vector<std::string> lines;
    c.report = [&](const std::string& line) { lines.push_back(line); };
    const CifarImportSummary s = import_cifar10_archive(c);
    EXPECT_EQ(s.format, format == "bin" ? CifarFormat::binary : CifarFormat::python);
    const Dataset d = read_hdf5_dataset(c.out);
    ASSERT_EQ(d.train.count, 15);  // 5 batches of 3, in order
    ASSERT_EQ(d.test.count, 3);
    EXPECT_EQ(d.train.height * d.train.width * d.train.channels, 3072);
    const auto bytes = [](const auto& v) {
      return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(v[0]));
    };
    EXPECT_EQ(bytes(d.train.images), slurp(expected / "train_images.bin"));
    EXPECT_EQ(bytes(d.test.images), slurp(expected / "test_images.bin"));
    EXPECT_EQ(bytes(d.train.labels), slurp(expected / "train_labels.bin"));
    EXPECT_EQ(bytes(d.test.labels), slurp(expected / "test_labels.bin"));
    std::string classes;
    for (const std::string& name : d.class_names) classes += name + "\n";
    EXPECT_EQ(classes, slurp(expected / "classes.txt"));
    EXPECT_EQ(attribute(d, "importer"), "ringtrain data import-cifar");
    EXPECT_EQ(attribute(d, "source_path"), fs::canonical(c.archive).string());
    EXPECT_EQ(attribute(d, "source_md5"), md5sum(c.archive));
    EXPECT_EQ(attribute(d, "source_md5_published"), "no");
    EXPECT_EQ(attribute(d, "content_xxh64"), hex64(content_hash(d)));
    // A test archive is not the published one: said before the import, and recorded.
    ASSERT_FALSE(lines.empty());
    EXPECT_MENTIONS(lines.front(), "import-cifar: warning: " + c.archive + ": MD5 " + s.md5 +
                                       " is not the published MD5");
    EXPECT_MENTIONS(lines.front(), kCifarPythonMd5);
    EXPECT_MENTIONS(lines.front(), "a modified or partial download?");
    EXPECT_MENTIONS(describe_provenance(d, "x.h5"),
                    "data: x.h5, imported by ringtrain data import-cifar");
    EXPECT_MENTIONS(describe_provenance(d, "x.h5"), "(md5 " + s.md5 + ", NOT the published one)");
  }
}

TEST(CifarArchiveErrors, BrokenArchivesAreRefusedNamingTheMember) {
  if (!python_problem().empty()) GTEST_SKIP() << python_problem();
  const fs::path dir = fresh_dir("broken");
  CifarImportConfig c;
  c.out = (dir / "out.h5").string();
  c.archive = make_archive(dir, "py2", "missing");
  EXPECT_MENTIONS(import_error(c), "member cifar-10-batches-py/test_batch is missing");
  c.archive = make_archive(dir, "py2", "corrupt");
  EXPECT_MENTIONS(import_error(c), c.archive + ": cifar-10-batches-py/data_batch_3: pickle: ");
  c.archive = make_archive(dir, "py2", "global");
  EXPECT_MENTIONS(import_error(c), c.archive +
                                       ": cifar-10-batches-py/data_batch_2: pickle: byte 2, "
                                       "opcode GLOBAL (0x63): global os.system is not allowed");
  c.archive = make_archive(dir, "py2", "empty");
  EXPECT_MENTIONS(import_error(c), c.archive + ": cifar-10-batches-py/test_batch: holds no images");
  for (const std::string format : {"py2", "bin"}) {
    c.archive = make_archive(dir, format, "names");
    EXPECT_MENTIONS(import_error(c),
                    c.archive + ": cifar-10-batches-" +
                        (format == "bin" ? "bin/batches.meta.txt" : "py/batches.meta") +
                        ": class name 3 'c\\xffat' is not valid UTF-8");
  }
  c.archive = make_archive(dir, "py2", "ok");
  CifarImportConfig same = c;  // the output is the archive itself: refused, even with --force
  same.out = same.archive;
  same.force = true;
  EXPECT_EQ(import_error(same), "data import-cifar: " + c.archive + " is " + c.archive +
                                    ", which this command reads: write the output elsewhere");
  for (const std::string format : {"p4", "bin"}) {
    c.archive = make_archive(dir, format, "label");
    EXPECT_MENTIONS(import_error(c), "data_batch_4" + std::string(format == "bin" ? ".bin" : "") +
                                         ": record 2 has label 10, outside [0, 10)");
  }
  EXPECT_FALSE(fs::exists(c.out));
  EXPECT_FALSE(fs::exists(c.out + ".tmp"));
}

TEST(CifarArchiveErrors, NotATarGzTruncatedOrNoOutput) {
  if (!python_problem().empty()) GTEST_SKIP() << python_problem();
  const fs::path dir = fresh_dir("files");
  CifarImportConfig c;
  c.out = (dir / "out.h5").string();
  c.archive = (dir / "notes.txt").string();
  std::ofstream(c.archive) << "not an archive\n";
  EXPECT_MENTIONS(import_error(c),
                  "data import-cifar: " + c.archive + ": cannot be read as a tar.gz archive");
  c.archive = (dir / "absent.tar.gz").string();
  EXPECT_MENTIONS(import_error(c), c.archive + ": no such file");
  c.archive = make_archive(dir, "bin", "ok");
  fs::resize_file(c.archive, fs::file_size(c.archive) / 2);
  EXPECT_MENTIONS(import_error(c), "a truncated or damaged download? fetch it again");
  c.archive = make_archive(dir, "py2", "ok");
  std::ofstream(c.out) << "old";
  EXPECT_MENTIONS(import_error(c), c.out + ": exists: pass --force to replace it");
  c.force = true;
  import_cifar10_archive(c);
  EXPECT_EQ(read_hdf5_dataset(c.out).train.count, 15);
}

// Provenance: synth records its generator and seed; a file without provenance attributes, or
// with attributes of other kinds (as h5py writes them), still loads and says so.
TEST(Provenance, SynthRecordsItsSeedAndOtherFilesStillLoad) {
  const fs::path dir = fresh_dir("provenance");
  SynthConfig synth;
  synth.train_count = 20;
  synth.test_count = 10;
  synth.seed = 18446744073709551615ull;  // beyond float64: stored as text
  const Dataset made = make_synthetic(synth);
  const std::string with = (dir / "with.h5").string(), without = (dir / "without.h5").string();
  write_hdf5_dataset(with, made, 0, synthetic_attributes(synth, made, "ringtrain data synth"));
  write_hdf5_dataset(without, made);
  const Dataset d = read_hdf5_dataset(with);
  EXPECT_EQ(attribute(d, "seed"), "18446744073709551615");
  EXPECT_EQ(describe_provenance(d, "s.h5"),
            "data: s.h5, generated by ringtrain data synth " RINGTRAIN_VERSION
            " (make_synthetic: 20 train and 10 test images 32x32x3, 10 classes, seed "
            "18446744073709551615), content xxh64 " +
                hex64(content_hash(made)));
  const Dataset bare = read_hdf5_dataset(without);
  EXPECT_TRUE(bare.attributes.empty());
  EXPECT_EQ(bare.train.labels, made.train.labels);
  EXPECT_MENTIONS(describe_provenance(bare, "b.h5"), "data: b.h5, no provenance attributes");
  if (!python_problem().empty()) GTEST_SKIP() << python_problem();
  const std::string command =
      "/usr/bin/python3 -c \"import h5py, numpy as np; f = h5py.File('" + without +
      "', 'a'); f.attrs['count'] = 5; f.attrs['names'] = ['a', 'b']; f.attrs['note'] = "
      "np.bytes_(b'fixed'); f.attrs['importer'] = 'another tool'\"";
  if (std::system(command.c_str()) != 0) GTEST_SKIP() << "no h5py: " << command;
  const Dataset other = read_hdf5_dataset(without);
  EXPECT_EQ(other.attributes, (std::vector<std::pair<std::string, std::string>>{
                                  {"importer", "another tool"}, {"note", "fixed"}}));
  EXPECT_EQ(describe_provenance(other, "o.h5"), "data: o.h5, imported by another tool");
}

// The real archive, when one was downloaded to data/ (RINGTRAIN_CIFAR_ARCHIVE overrides): the
// published MD5, 50 000 and 10 000 images, the usual classes.
TEST(CifarArchive, RealArchiveWhenPresent) {
  const char* given = std::getenv("RINGTRAIN_CIFAR_ARCHIVE");
  const std::string archive = given ? given : RINGTRAIN_SOURCE_DIR "/data/cifar-10-python.tar.gz";
  if (!fs::exists(archive))
    GTEST_SKIP() << "no CIFAR-10 archive at " << archive
                 << " (set RINGTRAIN_CIFAR_ARCHIVE to one elsewhere)";
  CifarImportConfig c;
  c.archive = archive;
  c.out = (fresh_dir("real") / "cifar10.h5").string();
  const CifarImportSummary s = import_cifar10_archive(c);
  EXPECT_TRUE(s.md5_published) << s.md5;
  const Dataset d = read_hdf5_dataset(c.out);
  EXPECT_EQ(d.train.count, 50000);
  EXPECT_EQ(d.test.count, 10000);
  EXPECT_EQ(d.class_names.front(), "airplane");
  EXPECT_EQ(attribute(d, "source_md5_published"), "yes");
}

}  // namespace
}  // namespace ringtrain
