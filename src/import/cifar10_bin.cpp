#include "ringtrain/import/cifar10_bin.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "ringtrain/core/error.hpp"
#include "ringtrain/core/input_file.hpp"
#include "ringtrain/loader/augment.hpp"

namespace ringtrain {
namespace {

std::vector<uint8_t> read_file(const std::filesystem::path& file) {
  check_input_file(file.string(), "data convert:", "a CIFAR-10 binary batch");
  std::ifstream in(file, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  RT_CHECK(!in.bad() && bytes.size() == std::filesystem::file_size(file),
           "data convert: ", file.string(), ": short read");
  return bytes;
}

}  // namespace

Split cifar10_split() {
  Split s;
  s.height = s.width = kCifarSide;
  s.channels = kCifarChannels;
  return s;
}

void append_cifar10_image(const uint8_t* chw, int64_t label, Split& split, const std::string& what,
                          int64_t record) {
  RT_CHECK(label >= 0 && label < kCifarClasses, what, ": record ", record, " has label ", label,
           ", outside [0, ", kCifarClasses, ")");
  split.labels.push_back(static_cast<int32_t>(label));
  const size_t at = split.images.size();
  split.images.resize(at + kCifarImageBytes);
  constexpr int kPlane = kCifarSide * kCifarSide;
  for (int c = 0; c < kCifarChannels; ++c)
    for (int p = 0; p < kPlane; ++p)
      split.images[at + static_cast<size_t>(p * kCifarChannels + c)] = chw[c * kPlane + p];
  ++split.count;
}

void append_cifar10_records(const std::vector<uint8_t>& bytes, const std::string& what,
                            Split& split) {
  constexpr size_t kRecord = 1 + kCifarImageBytes;
  RT_CHECK(!bytes.empty() && bytes.size() % kRecord == 0, what, ": ", bytes.size(),
           " bytes is not a whole number of ", kRecord, "-byte CIFAR-10 records");
  const int64_t records = static_cast<int64_t>(bytes.size() / kRecord);
  for (int64_t r = 0; r < records; ++r) {
    const uint8_t* rec = bytes.data() + r * kRecord;
    append_cifar10_image(rec + 1, rec[0], split, what, r);
  }
}

std::vector<std::string> cifar10_class_names(const std::string& text) {
  std::vector<std::string> names;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \r\t") != std::string::npos)
      names.push_back(line.substr(0, line.find_last_not_of(" \r\t") + 1));
  return names;
}

Dataset read_cifar10_bin(const std::string& dir) {
  const std::filesystem::path root(dir);
  RT_CHECK(std::filesystem::is_directory(root), "data convert: ", dir, ": not a folder");
  Dataset d;
  d.train = cifar10_split();
  d.test = cifar10_split();
  const auto append = [](const std::filesystem::path& file, Split& split) {
    append_cifar10_records(read_file(file), "data convert: " + file.string(), split);
  };
  for (int i = 1; i <= 5; ++i) append(root / ("data_batch_" + std::to_string(i) + ".bin"), d.train);
  append(root / "test_batch.bin", d.test);
  const std::filesystem::path meta = root / "batches.meta.txt";
  if (std::filesystem::exists(meta)) {
    const std::vector<uint8_t> text = read_file(meta);
    d.class_names = cifar10_class_names(std::string(text.begin(), text.end()));
  }
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
  for (const auto& [name, value] : data.attributes) os << "  " << name << ": " << value << "\n";
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
