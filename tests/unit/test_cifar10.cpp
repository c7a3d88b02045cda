// The CIFAR-10 binary converter: a small distribution written here converts to exactly its
// pixels (CHW records to HWC) and labels; malformed files are refused with the file named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "ringtrain/core/error.hpp"
#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/import/cifar10_bin.hpp"

namespace ringtrain {
namespace {

namespace fs = std::filesystem;

struct Record {
  uint8_t label;
  std::vector<uint8_t> chw;  // 3 planes of 32x32
};

std::vector<Record> write_batch(const fs::path& file, int records, std::mt19937& rng) {
  std::vector<Record> out;
  std::ofstream f(file, std::ios::binary);
  for (int r = 0; r < records; ++r) {
    Record rec{static_cast<uint8_t>(rng() % 10), std::vector<uint8_t>(3072)};
    for (auto& v : rec.chw) v = static_cast<uint8_t>(rng());
    f.put(static_cast<char>(rec.label));
    f.write(reinterpret_cast<const char*>(rec.chw.data()), 3072);
    out.push_back(rec);
  }
  return out;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(Cifar10Bin, ConvertsToHdf5WithExactPixelsAndLabels) {
  const fs::path dir = fresh_dir("ringtrain_cifar_ok");
  std::mt19937 rng(1);
  std::vector<Record> train;
  for (int i = 1; i <= 5; ++i) {
    const auto batch = write_batch(dir / ("data_batch_" + std::to_string(i) + ".bin"), i, rng);
    train.insert(train.end(), batch.begin(), batch.end());
  }
  const auto test = write_batch(dir / "test_batch.bin", 2, rng);
  std::ofstream(dir / "batches.meta.txt")
      << "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n\n";

  const std::string h5 = (dir / "cifar10.h5").string();
  write_hdf5_dataset(h5, read_cifar10_bin(dir.string()), 1);
  const Dataset d = read_hdf5_dataset(h5);
  ASSERT_EQ(d.train.count, 15);
  ASSERT_EQ(d.test.count, 2);
  EXPECT_EQ(d.class_names.front(), "airplane");
  EXPECT_EQ(d.class_names.back(), "truck");
  for (size_t i = 0; i < train.size(); ++i) {
    EXPECT_EQ(d.train.labels[i], train[i].label);
    for (int c = 0; c < 3; ++c)
      for (int p = 0; p < 1024; p += 37)
        ASSERT_EQ(d.train.image(static_cast<int64_t>(i))[p * 3 + c], train[i].chw[c * 1024 + p]);
  }
  EXPECT_EQ(d.test.image(1)[5 * 3 + 2], test[1].chw[2 * 1024 + 5]);
}

TEST(Cifar10Bin, RefusesTruncatedRecordsAndMissingFiles) {
  const fs::path dir = fresh_dir("ringtrain_cifar_bad");
  std::mt19937 rng(2);
  for (int i = 1; i <= 5; ++i)
    write_batch(dir / ("data_batch_" + std::to_string(i) + ".bin"), 1, rng);
  try {
    read_cifar10_bin(dir.string());
    FAIL() << "missing test_batch.bin accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test_batch.bin: no such file"), std::string::npos);
  }
  write_batch(dir / "test_batch.bin", 1, rng);
  fs::resize_file(dir / "data_batch_3.bin", 3000);
  try {
    read_cifar10_bin(dir.string());
    FAIL() << "truncated batch accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("data_batch_3.bin: 3000 bytes is not a whole number"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ringtrain
