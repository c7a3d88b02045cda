#include "ringtrain/data/cifar10_bin.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "ringtrain/core/error.hpp"
#include "ringtrain/data/augment.hpp"

namespace ringtrain {
namespace {

constexpr int kSide = 32, kChannels = 3, kPixels = kSide * kSide * kChannels;
constexpr int kRecord = 1 + kPixels;

void append_batch_file(const std::filesystem::path& file, Split& split) {
  RT_CHECK(std::filesystem::exists(file), "data convert: ", file.string(), ": no such file");
  const auto size = std::filesystem::file_size(file);
  RT_CHECK(size > 0 && size % kRecord == 0, "data convert: ", file.string(), ": ", size,
           " bytes is not a whole number of ", kRecord, "-byte CIFAR-10 records");
  std::ifstream in(file, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  RT_CHECK(bytes.size() == size, "data convert: ", file.string(), ": short read");
  const int64_t records = static_cast<int64_t>(size / kRecord);
  for (int64_t r = 0; r < records; ++r) {
    const uint8_t* rec = bytes.data() + r * kRecord;
    RT_CHECK(rec[0] < 10, "data convert: ", file.string(), ": record ", r, " has label ",
             int(rec[0]), ", outside [0, 10)");
    split.labels.push_back(rec[0]);
    const size_t at = split.images.size();
    split.images.resize(at + kPixels);
    for (int c = 0; c < kChannels; ++c)
      for (int p = 0; p < kSide * kSide; ++p)
        split.images[at + static_cast<size_t>(p * kChannels + c)] = rec[1 + c * kSide * kSide + p];
  }
  split.count += records;
}

Split empty_split() {
  Split s;
  s.height = s.width = kSide;
  s.channels = kChannels;
  return s;
}

std::vector<std::string> read_class_names(const std::filesystem::path& file) {
  std::vector<std::string> names;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.find_first_not_of(" \r\t") != std::string::npos)
      names.push_back(line.substr(0, line.find_last_not_of(" \r\t") + 1));
  return names;
}

}  // namespace

Dataset read_cifar10_bin(const std::string& dir) {
  const std::filesystem::path root(dir);
  RT_CHECK(std::filesystem::is_directory(root), "data convert: ", dir, ": not a folder");
  Dataset d;
  d.train = empty_split();
  d.test = empty_split();
  for (int i = 1; i <= 5; ++i)
    append_batch_file(root / ("data_batch_" + std::to_string(i) + ".bin"), d.train);
  append_batch_file(root / "test_batch.bin", d.test);
  d.class_names = read_class_names(root / "batches.meta.txt");
  if (d.class_names.empty())
    d.class_names = {"airplane", "automobile", "bird",  "cat",  "deer",
                     "dog",      "frog",       "horse", "ship", "truck"};
  RT_CHECK(d.classes() == 10, "data convert: ", (root / "batches.meta.txt").string(), ": ",
           d.classes(), " class names, expected 10");
  return d;
}

std::string inspect_dataset(const Dataset& data, const std::string& path) {
  std::ostringstream os;
  os << path << ": " << data.classes() << " classes\n";
  for (const auto& [name, split] :
       {std::pair<const char*, const Split*>{"train", &data.train}, {"test", &data.test}}) {
    os << "  " << name << ": " << split->count << " images " << split->height << "x" << split->width
       << "x" << split->channels << " (NHWC uint8)\n    per class:";
    std::vector<int64_t> counts(static_cast<size_t>(data.classes()), 0);
    for (int32_t l : split->labels) ++counts[static_cast<size_t>(l)];
    for (int k = 0; k < data.classes(); ++k) os << " " << data.class_names[k] << "=" << counts[k];
    const Normalization n = channel_statistics(*split);
    os << "\n    channel mean/std (0-1 scale):";
    for (int c = 0; c < split->channels; ++c) os << " " << n.mean[c] << "/" << n.std[c];
    os << "\n";
  }
  return os.str();
}

}  // namespace ringtrain
