#include "ringtrain/import/cifar10_archive.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <array>
#include <filesystem>
#include <memory>
#include <new>
#include <optional>

#include "ringtrain/core/class_names.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/core/md5.hpp"
#include "ringtrain/core/output_file.hpp"
#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/data/provenance.hpp"
#include "ringtrain/import/cifar10_bin.hpp"
#include "ringtrain/import/pickle_reader.hpp"

namespace ringtrain {
namespace {

namespace fs = std::filesystem;
constexpr const char* kWhat = "data import-cifar: ";
const std::string kNotTarGz =
    "cannot be read as a tar.gz archive (not one, or a truncated or damaged download? fetch it "
    "again)";
constexpr int kBatches = 6;             // data_batch_1..5, then test_batch
constexpr int kMembers = kBatches + 1;  // and the class names
// What a CIFAR archive can hold: 60 000 images in all (CIFAR-10 and CIFAR-100 alike), at most
// 50 000 in one file (CIFAR-100's train batch; an official CIFAR-10 batch holds 10 000).
// Note: the bounds are checked before the memory is taken, so that a small crafted archive
// cannot make the import hold gigabytes.
constexpr int64_t kMaxImages = 60000;
constexpr int64_t kMaxBatchImages = 50000;
// A member's bytes: the largest file's pixels, and room for each image's label and file name.
constexpr la_int64_t kMaxMember = kMaxBatchImages * (kCifarImageBytes + 256);

const char* folder(CifarFormat f) {
  return f == CifarFormat::python ? "cifar-10-batches-py/" : "cifar-10-batches-bin/";
}

// The official name of member `slot` (0-4: data_batch_1..5, 5: test_batch, 6: the meta file).
std::string member_name(CifarFormat f, int slot) {
  const std::string suffix = f == CifarFormat::python ? "" : ".bin";
  if (slot < 5) return folder(f) + ("data_batch_" + std::to_string(slot + 1)) + suffix;
  if (slot == 5) return folder(f) + ("test_batch" + suffix);
  return folder(f) + std::string(f == CifarFormat::python ? "batches.meta" : "batches.meta.txt");
}

// The slot of an archive member, and its format; nullopt for a member passed over.
std::optional<std::pair<CifarFormat, int>> member_slot(std::string name) {
  if (name.rfind("./", 0) == 0) name.erase(0, 2);
  for (CifarFormat f : {CifarFormat::python, CifarFormat::binary})
    for (int slot = 0; slot < kMembers; ++slot)
      if (name == member_name(f, slot)) return std::make_pair(f, slot);
  return std::nullopt;
}

using ArchivePtr = std::unique_ptr<archive, int (*)(archive*)>;

// libarchive's reason for the last failure.
const char* reason(archive* a) {
  const char* text = archive_error_string(a);
  return text ? text : "no reason given";
}

// Refuses a path that is not a file, before its MD5 is taken.
void check_archive_file(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  RT_CHECK(fs::exists(status), kWhat, path,
           ": no such file (give the downloaded cifar-10-python.tar.gz or cifar-10-binary.tar.gz)");
  RT_CHECK(fs::is_regular_file(status), kWhat, path,
           ": not a file (give the downloaded cifar-10-python.tar.gz or cifar-10-binary.tar.gz)");
}

ArchivePtr open_archive(const std::string& path) {
  check_archive_file(path);
  ArchivePtr a(archive_read_new(), archive_read_free);
  RT_CHECK(a && archive_read_support_filter_gzip(a.get()) == ARCHIVE_OK &&
               archive_read_support_format_tar(a.get()) == ARCHIVE_OK,
           kWhat, "cannot set up libarchive for tar.gz");
  RT_CHECK(archive_read_open_filename(a.get(), path.c_str(), 1 << 20) == ARCHIVE_OK, kWhat, path,
           ": ", kNotTarGz, ": libarchive: ", reason(a.get()));
  return a;
}

std::vector<uint8_t> read_member(archive* a, archive_entry* entry, const std::string& what) {
  RT_CHECK(archive_entry_size_is_set(entry) && archive_entry_size(entry) <= kMaxMember, what,
           ": a member of ", archive_entry_size(entry), " bytes, more than the ", kMaxMember,
           " bytes any CIFAR file takes (", kMaxBatchImages, " images of ", kCifarImageBytes,
           " bytes, with their labels and names): not an official archive (download it again)");
  std::vector<uint8_t> bytes(static_cast<size_t>(archive_entry_size(entry)));
  size_t done = 0;
  while (done < bytes.size()) {
    const la_ssize_t got = archive_read_data(a, bytes.data() + done, bytes.size() - done);
    RT_CHECK(got > 0, what, ": read failed after ", done, " of ", bytes.size(),
             " bytes: ", got < 0 ? reason(a) : "the archive ends",
             " (a truncated or damaged download? fetch it again)");
    done += static_cast<size_t>(got);
  }
  return bytes;
}

// A python batch: a dict whose `data` is a uint8 [N, 3072] array and `labels` N integers.
void append_python_batch(const std::vector<uint8_t>& bytes, const std::string& what, Split& split) {
  const Pickle p = read_pickle(bytes.data(), bytes.size(), what);
  RT_CHECK(p.top().kind == PickleKind::dict, what, ": holds ", pickle_kind_name(p.top().kind),
           ", expected a dict with data and labels");
  const PickleValue* data = p.find(p.top(), "data");
  const PickleValue* labels = p.find(p.top(), "labels");
  RT_CHECK(data && data->kind == PickleKind::array && data->dtype == "|u1" &&
               data->shape.size() == 2 && data->shape[1] == kCifarImageBytes &&
               !data->fortran_order,
           what, ": its data is ", data ? pickle_kind_name(data->kind) : "missing",
           data ? " " + data->dtype : "", ", expected a uint8 array [N, 3072] in C order");
  RT_CHECK(data->shape[0] > 0, what,
           ": holds no images (an official batch holds 10000): a damaged or modified archive? "
           "download it again");
  RT_CHECK(data->shape[0] <= kMaxBatchImages, what, ": holds ", data->shape[0],
           " images, more than the ", kMaxBatchImages,
           " of any CIFAR file: not an official archive (download it again)");
  RT_CHECK(labels && (labels->kind == PickleKind::list || labels->kind == PickleKind::tuple) &&
               static_cast<int64_t>(labels->items.size()) == data->shape[0],
           what, ": its labels are ", labels ? pickle_kind_name(labels->kind) : "missing", " of ",
           labels ? labels->items.size() : 0, " items, expected a list of ", data->shape[0],
           " integers");
  const auto* pixels = reinterpret_cast<const uint8_t*>(data->bytes.data());
  split.images.reserve(static_cast<size_t>(data->shape[0] * kCifarImageBytes));
  for (int64_t i = 0; i < data->shape[0]; ++i) {
    const PickleValue& label = p[labels->items[static_cast<size_t>(i)]];
    RT_CHECK(label.kind == PickleKind::integer, what, ": label ", i, " is ",
             pickle_kind_name(label.kind), ", not an integer");
    append_cifar10_image(pixels + i * kCifarImageBytes, label.integer, split, what, i);
  }
}

// batches.meta: a dict whose `label_names` is a list of strings.
std::vector<std::string> python_class_names(const std::vector<uint8_t>& bytes,
                                            const std::string& what) {
  const Pickle p = read_pickle(bytes.data(), bytes.size(), what);
  const PickleValue* names =
      p.top().kind == PickleKind::dict ? p.find(p.top(), "label_names") : nullptr;
  RT_CHECK(names && names->kind == PickleKind::list, what,
           ": expected a dict whose label_names is a list of the class names");
  std::vector<std::string> out;
  for (int64_t index : names->items) {
    RT_CHECK(p[index].kind == PickleKind::bytes || p[index].kind == PickleKind::text, what,
             ": a class name is ", pickle_kind_name(p[index].kind), ", not a string");
    out.push_back(p[index].bytes);
  }
  return out;
}

// What the archive held, member by member.
struct Members {
  std::optional<CifarFormat> format;
  std::array<Split, kBatches> batches;
  std::array<bool, kMembers> seen{};
  std::vector<std::string> class_names;
  int64_t images = 0;  // in the batches read so far
};

void take_member(CifarFormat format, int slot, const std::vector<uint8_t>& bytes,
                 const std::string& what, Members& m) {
  const bool python = format == CifarFormat::python;
  if (slot == kBatches) {
    m.class_names = python ? python_class_names(bytes, what)
                           : cifar10_class_names(std::string(bytes.begin(), bytes.end()));
    RT_CHECK(m.class_names.size() == kCifarClasses, what, ": ", m.class_names.size(),
             " class names, expected ", kCifarClasses);
    for (size_t k = 0; k < m.class_names.size(); ++k)
      check_class_name(m.class_names[k], str_cat(what, ": class name ", k),
                       "a damaged or modified archive? download it again");
    return;
  }
  m.batches[slot] = cifar10_split();
  if (python)
    append_python_batch(bytes, what, m.batches[slot]);
  else
    append_cifar10_records(bytes, what, m.batches[slot]);
  m.images += m.batches[slot].count;
  RT_CHECK(m.images <= kMaxImages, what, ": brings the archive to ", m.images,
           " images, more than the ", kMaxImages,
           " a CIFAR archive holds: not an official archive (download it again)");
}

// Reads the member the archive is at into `m`, saying which member and how large it is when
// memory runs out despite the bounds.
void read_member_into(archive* a, archive_entry* entry, CifarFormat format, int slot,
                      const std::string& what, Members& m) {
  try {
    take_member(format, slot, read_member(a, entry, what), what, m);
  } catch (const std::bad_alloc&) {
    throw Error(str_cat(what, ": out of memory reading this member of ", archive_entry_size(entry),
                        " bytes, with ", m.images,
                        " images read before it: free memory or raise the limit (ulimit -v)"));
  }
}

// Reads every official member of the archive into `m`; passes over the others.
void read_members(const std::string& path, Members& m,
                  const std::function<void(const std::string&)>& report) {
  ArchivePtr a = open_archive(path);
  std::string last;  // the last member read
  for (archive_entry* entry = nullptr;;) {
    const int r = archive_read_next_header(a.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    RT_CHECK(r == ARCHIVE_OK || r == ARCHIVE_WARN, kWhat, path, ": ",
             last.empty()
                 ? kNotTarGz
                 : "damaged after " + last + " (a truncated or damaged download? fetch it again)",
             ": libarchive: ", reason(a.get()));
    const char* name = archive_entry_pathname(entry);
    const auto found = name ? member_slot(name) : std::nullopt;
    if (!found || archive_entry_filetype(entry) != AE_IFREG) continue;
    const auto [format, slot] = *found;
    const std::string member = member_name(format, slot), what = str_cat(kWhat, path, ": ", member);
    RT_CHECK(!m.format || *m.format == format, what, ": the archive also holds ", folder(*m.format),
             " members: give one of the official archives, not a mix");
    RT_CHECK(!m.seen[slot], what, ": appears twice in the archive");
    m.format = format;
    read_member_into(a.get(), entry, format, slot, what, m);
    m.seen[slot] = true;
    last = member;
    if (report && slot < kBatches)
      report(str_cat("import-cifar: read ", member, ": ", m.batches[slot].count, " images"));
  }
  RT_CHECK(archive_read_close(a.get()) == ARCHIVE_OK, kWhat, path,
           ": closing failed: ", reason(a.get()));
}

void append_split(Split& to, Split& from) {
  to.images.insert(to.images.end(), from.images.begin(), from.images.end());
  to.labels.insert(to.labels.end(), from.labels.begin(), from.labels.end());
  to.count += from.count;
  from = Split{};
}

}  // namespace

Dataset read_cifar10_archive(const std::string& path, CifarFormat& format,
                             const std::function<void(const std::string&)>& report) {
  Members m;
  read_members(path, m, report);
  RT_CHECK(m.format, kWhat, path,
           ": holds no cifar-10-batches-py/ nor cifar-10-batches-bin/ members: not a CIFAR-10 "
           "archive (give cifar-10-python.tar.gz or cifar-10-binary.tar.gz)");
  format = *m.format;
  for (int slot = 0; slot < kMembers; ++slot)
    RT_CHECK(m.seen[slot], kWhat, path, ": member ", member_name(format, slot),
             " is missing (a partial or repacked archive? download it again)");
  Dataset d;
  d.train = cifar10_split();
  for (int slot = 0; slot < 5; ++slot) append_split(d.train, m.batches[slot]);
  d.test = std::move(m.batches[5]);
  d.class_names = std::move(m.class_names);
  return d;
}

CifarImportSummary import_cifar10_archive(const CifarImportConfig& c) {
  check_output_outside(c.out, c.archive, kWhat);  // --force would replace the archive
  check_output_file(c.out, c.force, kWhat);
  const auto report = [&](const std::string& line) {
    if (c.report) c.report(line);
  };
  check_archive_file(c.archive);
  CifarImportSummary s;
  s.md5 = md5_file(c.archive);
  const bool known = s.md5 == kCifarPythonMd5 || s.md5 == kCifarBinaryMd5;
  if (!known)
    report(str_cat("import-cifar: warning: ", c.archive, ": MD5 ", s.md5,
                   " is not the published MD5 of either CIFAR-10 archive (cifar-10-python.tar.gz ",
                   kCifarPythonMd5, ", cifar-10-binary.tar.gz ", kCifarBinaryMd5,
                   "): a modified or partial download? Importing it anyway; the file records that "
                   "it did not match"));
  const Dataset d = read_cifar10_archive(c.archive, s.format, report);
  s.md5_published = s.md5 == (s.format == CifarFormat::python ? kCifarPythonMd5 : kCifarBinaryMd5);
  if (known && !s.md5_published)
    report(str_cat("import-cifar: warning: ", c.archive, ": MD5 ", s.md5,
                   " is the published MD5 of the other format's archive, not of this one"));
  Provenance p;
  p.importer = "ringtrain data import-cifar";
  p.source_path = fs::canonical(c.archive).string();
  p.source_md5 = s.md5;
  p.source_md5_published = s.md5_published ? "yes" : "no";
  FileAttributes attributes;
  add_provenance(p, d, attributes);
  write_hdf5_dataset(c.out, d, c.gzip, attributes);
  s.train = d.train.count;
  s.test = d.test.count;
  s.classes = d.classes();
  return s;
}

}  // namespace ringtrain
