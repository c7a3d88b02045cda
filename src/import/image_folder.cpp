#include "ringtrain/import/image_folder.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <new>

#include "ringtrain/core/checked_math.hpp"
#include "ringtrain/core/class_names.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/core/memory_budget.hpp"
#include "ringtrain/core/output_file.hpp"
#include "ringtrain/core/thread_pool.hpp"
#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/data/provenance.hpp"
#include "ringtrain/import/image_decode.hpp"

namespace ringtrain {
namespace {

namespace fs = std::filesystem;
constexpr const char* kWhat = "data import-images: ";
constexpr int kMaxSide = 65535;

// One image file of a split and the index of its class.
struct ImageFile {
  std::string path;
  int32_t label = 0;
};

// A split's class folders and image files in ImageFolder's order, the files passed over, and
// the links to folders inside class folders (not followed).
struct SplitListing {
  std::vector<std::string> classes;
  std::vector<ImageFile> files;
  int64_t skipped = 0, links = 0;
  std::string first_skipped, first_link;
};

bool has_image_name(const fs::path& file) {
  std::string ext = file.extension().string();
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

void count(int64_t& n, std::string& first, const fs::path& file) {
  if (n++ == 0) first = file.string();
}

void skip(SplitListing& listing, const fs::path& file) {
  count(listing.skipped, listing.first_skipped, file);
}

// "DIR: no such folder" or the system's reason; empty when `dir` is a folder.
std::string folder_problem(const fs::path& dir) {
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) return ec.message();
  if (!fs::exists(status)) return "no such folder";
  return fs::is_directory(status) ? "" : "not a folder";
}

// The class folders of a split, sorted as bytes (as ImageFolder's sorted() of the names); files
// beside them are passed over.
std::vector<std::string> class_folders(const fs::path& split, SplitListing& listing) {
  std::vector<std::string> names;
  std::error_code ec, entry_ec;  // an entry that cannot be examined is no class folder
  for (fs::directory_iterator it(split, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(entry_ec))
      names.push_back(it->path().filename().string());
    else
      skip(listing, it->path());
  }
  RT_CHECK(!ec, kWhat, split.string(), ": cannot be listed: ", ec.message());
  const std::string what = str_cat(kWhat, escape_text(split.string()), ": class folder");
  for (const std::string& name : names) check_class_name(name, what, "rename the folder");
  std::sort(names.begin(), names.end());
  check_distinct_class_names(names, str_cat(what, "s"), "rename one of the folders");
  return names;
}

// The images of one class folder and its subfolders, sorted by folder, then by name
// (ImageFolder walks sorted(os.walk(...)) and sorts each folder's names). A file with an image
// name is an image whatever it is: decoding says why it cannot be read.
// Note: links to folders inside a class folder are counted, not followed (os.walk's followlinks
// would): a link to the folder itself or above lists its images again at every depth, and two
// such links make the walk exponential.
void list_class(const fs::path& folder, int32_t label, SplitListing& listing) {
  std::vector<std::pair<std::string, std::string>> found;  // (folder, name)
  std::error_code ec, entry_ec;
  for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(entry_ec)) {
      if (it->is_symlink(entry_ec)) count(listing.links, listing.first_link, it->path());
      continue;
    }
    if (has_image_name(it->path()))
      found.emplace_back(it->path().parent_path().string(), it->path().filename().string());
    else
      skip(listing, it->path());
  }
  RT_CHECK(!ec, kWhat, folder.string(), ": cannot be listed: ", ec.message());
  RT_CHECK(!found.empty(), kWhat, folder.string(),
           ": an empty class folder (no .png, .jpg or .jpeg file in it or below): add its "
           "images or remove it");
  std::sort(found.begin(), found.end());
  for (const auto& [dir, name] : found)
    listing.files.push_back({(fs::path(dir) / name).string(), label});
}

SplitListing list_split(const fs::path& root, const std::string& name) {
  const fs::path split = root / name;
  const std::string problem = folder_problem(split);
  RT_CHECK(problem.empty(), kWhat, split.string(), ": ", problem, ": expected the ", name,
           " images in ", split.string(),
           "/<class>/*.png|jpg|jpeg (the layout of torchvision's ImageFolder)");
  SplitListing listing;
  listing.classes = class_folders(split, listing);
  RT_CHECK(!listing.classes.empty(), kWhat, split.string(),
           ": no class folders: put each class's images in ", split.string(), "/<class>/");
  for (size_t k = 0; k < listing.classes.size(); ++k)
    list_class(split / listing.classes[k], static_cast<int32_t>(k), listing);
  return listing;
}

// Both splits need the same class folders, or a label would mean different classes.
void check_same_classes(const SplitListing& train, const SplitListing& test, const fs::path& root) {
  for (const std::string& name : train.classes)
    RT_CHECK(std::binary_search(test.classes.begin(), test.classes.end(), name), kWhat,
             (root / "test" / name).string(), ": missing: ", (root / "train" / name).string(),
             " exists, and train and test need the same class folders");
  for (const std::string& name : test.classes)
    RT_CHECK(std::binary_search(train.classes.begin(), train.classes.end(), name), kWhat,
             (root / "test" / name).string(), ": a class folder that ", (root / "train").string(),
             " lacks: train and test need the same class folders");
}

// The size images are stored at: the configured one (every image resized), or the first train
// image's (every image must have it).
struct StoredSize {
  int height = 0, width = 0;
  bool resize = false;
  std::string first;
};

StoredSize stored_size(const ImportConfig& c, const SplitListing& train) {
  StoredSize size{c.height, c.width, c.height > 0, train.files.front().path};
  if (!size.resize) {
    const RgbImage first = decode_image(size.first);
    size.height = first.height;
    size.width = first.width;
  }
  return size;
}

// Note: the import holds every stored image, then builds the HDF5 file in memory and copies it
// out: three times the images at the end. Checked before any image is decoded.
void check_dataset_fits(int64_t images, const StoredSize& size) {
  const int64_t bytes =
      checked_mul(images, int64_t{size.height} * size.width * 3, "import-images: stored bytes");
  check_fits_memory(checked_mul(bytes, 3, "import-images: bytes held"),
                    str_cat(kWhat, images, " images of ", size.height, "x", size.width,
                            " RGB, with the HDF5 file built from them in memory,"),
                    size.resize ? "pass a smaller --size, or import fewer images"
                                : "pass --size HxW to store them smaller, or import fewer images");
}

// The bytes the decodes in flight may hold together: half of what the memory limit leaves beside
// the stored images (the rest is for the threads, the files read and the allocator's slack).
int64_t decode_budget(int64_t stored_bytes) {
  return std::max<int64_t>(1, (memory_limit().bytes - stored_bytes) / 2);
}

// Decodes one image into `out`, its decode (and resize) holding bytes of `budget` until done:
// a large source image waits for room rather than many being decoded at once.
void decode_into(const std::string& path, const StoredSize& size, MemoryBudget& budget,
                 uint8_t* out) {
  MemoryBudget::Lease lease;
  int64_t held = 0;
  const auto reserve = [&](int height, int, int64_t bytes) {
    held = bytes + (size.resize ? resize_bytes(height, size.width) : 0);
    lease = budget.take(held);
  };
  try {
    const RgbImage image = decode_image(path, reserve);
    if (size.resize) {
      resize_and_crop(image, size.height, size.width, out);
      return;
    }
    RT_CHECK(image.height == size.height && image.width == size.width, kWhat, path, ": ",
             image.height, "x", image.width, " pixels (height x width), but the first image, ",
             size.first, ", is ", size.height, "x", size.width,
             ": pass --size HxW to bring every image to one size (scaled to cover it, then "
             "centre-cropped)");
    std::memcpy(out, image.pixels.data(), image.pixels.size());
  } catch (const std::bad_alloc&) {
    throw Error(str_cat(kWhat, path, ": out of memory decoding it (", held / 1000000,
                        " MB with its resize): lower --workers, or shrink the image first"));
  }
}

// One file to decode and where its pixels go.
struct DecodeJob {
  const std::string* path;
  uint8_t* out;
};

// Note: each thread takes the next job in order and writes only that job's pixels, so the
// result does not depend on the thread count. After a failure the threads stop taking jobs; the
// error of the earliest failed file among those tried is thrown.
void decode_all(const std::vector<DecodeJob>& jobs, const StoredSize& size, MemoryBudget& budget,
                const ImportConfig& c) {
  const int64_t total = static_cast<int64_t>(jobs.size());
  const int64_t step = std::max<int64_t>(1, total / 100);
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  int64_t reported = 0, first_failure = INT64_MAX;
  std::string error;
  const auto worker = [&](int64_t, int64_t) {
    for (int64_t i = next++; i < total && !failed; i = next++) {
      try {
        decode_into(*jobs[i].path, size, budget, jobs[i].out);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex);
        if (i < first_failure) error = e.what();
        first_failure = std::min(first_failure, i);
        failed = true;
        continue;
      }
      const int64_t now = ++done;
      if (!c.progress || (now % step != 0 && now != total)) continue;
      std::lock_guard<std::mutex> lock(mutex);
      if (now <= reported) continue;
      reported = now;
      c.progress(now, total);
    }
  };
  ThreadPool pool(c.workers - 1);
  pool.parallel_for(c.workers, worker);  // one range of one index per thread: one worker each
  if (failed) throw Error(error);
}

// A split of `files.size()` images of `size`, labelled, its pixels still to decode.
Split blank_split(const SplitListing& listing, const StoredSize& size) {
  Split s;
  s.count = static_cast<int64_t>(listing.files.size());
  s.height = size.height;
  s.width = size.width;
  s.channels = 3;
  s.images.resize(static_cast<size_t>(s.count * s.image_bytes()));
  for (const ImageFile& file : listing.files) s.labels.push_back(file.label);
  return s;
}

void add_jobs(const SplitListing& listing, Split& split, std::vector<DecodeJob>& jobs) {
  for (int64_t i = 0; i < split.count; ++i)
    jobs.push_back({&listing.files[static_cast<size_t>(i)].path,
                    split.images.data() + i * split.image_bytes()});
}

// Per-channel mean and population standard deviation on the 0-1 scale.
// Note: from exact integer moments (n * sum of squares - sum^2 = n^2 * variance, in 128 bits),
// then divisions and a square root, each rounded once: nothing a compiler could fuse into a
// multiply-add, so every build stores the same values.
void channel_moments(const Split& s, std::vector<double>& mean, std::vector<double>& stdev) {
  uint64_t sum[3] = {}, squares[3] = {};
  for (size_t i = 0; i < s.images.size(); i += 3)
    for (int c = 0; c < 3; ++c) {
      const uint64_t v = s.images[i + c];
      sum[c] += v;
      squares[c] += v * v;
    }
  const uint64_t n = s.images.size() / 3;
  for (int c = 0; c < 3; ++c) {
    using Wide = unsigned __int128;
    const Wide spread = Wide{n} * squares[c] - Wide{sum[c]} * sum[c];
    mean.push_back(static_cast<double>(sum[c]) / static_cast<double>(n) / 255);
    stdev.push_back(std::sqrt(static_cast<double>(spread)) / static_cast<double>(n) / 255);
  }
}

FileAttributes provenance(const Dataset& d, const std::string& dir) {
  FileAttributes a;
  std::vector<double> mean, stdev;
  channel_moments(d.train, mean, stdev);
  a.numbers = {{"channel_mean", mean}, {"channel_std", stdev}};
  Provenance p;
  p.importer = "ringtrain data import-images";
  p.source_dir = fs::canonical(dir).string();
  add_provenance(p, d, a);
  return a;
}

}  // namespace

void parse_image_size(const std::string& text, int& height, int& width) {
  const size_t x = text.find_first_of("xX");
  const std::string h = text.substr(0, x), w = x == std::string::npos ? h : text.substr(x + 1);
  const auto side = [&](const std::string& digits) {
    const bool ok = !digits.empty() && digits.size() <= 5 &&
                    digits.find_first_not_of("0123456789") == std::string::npos &&
                    std::stoi(digits) >= 1 && std::stoi(digits) <= kMaxSide;
    RT_CHECK_AS(ConfigError, ok, "image size '", text, "' is not HxW (height x width, each 1 to ",
                kMaxSide, ", e.g. 32x32) nor N (NxN)");
    return std::stoi(digits);
  };
  height = side(h);
  width = side(w);
  RT_CHECK_AS(ConfigError, int64_t{height} * width <= kMaxDecodedPixels, "image size '", text,
              "' is more than the ", kMaxDecodedPixels, " pixels an image may have");
}

ImageFolder load_image_folder(const ImportConfig& c) {
  RT_CHECK(c.workers >= 1, kWhat, "--workers must be at least 1, got ", c.workers);
  RT_CHECK((c.height > 0) == (c.width > 0), kWhat, "give both height and width, or neither");
  const fs::path root(c.dir);
  const std::string problem = folder_problem(root);
  RT_CHECK(problem.empty(), kWhat, c.dir, ": ", problem,
           ": give the folder that holds train/<class>/ and test/<class>/");
  const SplitListing train = list_split(root, "train"), test = list_split(root, "test");
  check_same_classes(train, test, root);
  const StoredSize size = stored_size(c, train);
  const auto images = static_cast<int64_t>(train.files.size() + test.files.size());
  check_dataset_fits(images, size);
  MemoryBudget budget(decode_budget(images * size.height * size.width * 3));
  ImageFolder folder;
  folder.data.class_names = train.classes;
  folder.data.train = blank_split(train, size);
  folder.data.test = blank_split(test, size);
  std::vector<DecodeJob> jobs;
  add_jobs(train, folder.data.train, jobs);
  add_jobs(test, folder.data.test, jobs);
  decode_all(jobs, size, budget, c);
  folder.skipped = train.skipped + test.skipped;
  folder.first_skipped = train.skipped > 0 ? train.first_skipped : test.first_skipped;
  folder.links = train.links + test.links;
  folder.first_link = train.links > 0 ? train.first_link : test.first_link;
  return folder;
}

ImportSummary import_image_folder(const ImportConfig& c) {
  // Note: an output inside a split folder would be read as a (corrupt) image by the next import.
  for (const char* split : {"train", "test"})
    check_output_outside(c.out, (fs::path(c.dir) / split).string(), kWhat);
  check_output_file(c.out, c.force, kWhat);
  const ImageFolder folder = load_image_folder(c);
  const Dataset& d = folder.data;
  write_hdf5_dataset(c.out, d, c.gzip, provenance(d, c.dir));
  ImportSummary s;
  s.train = d.train.count;
  s.test = d.test.count;
  s.skipped = folder.skipped;
  s.links = folder.links;
  s.classes = d.classes();
  s.height = d.train.height;
  s.width = d.train.width;
  s.first_skipped = folder.first_skipped;
  s.first_link = folder.first_link;
  return s;
}

}  // namespace ringtrain
