// What the HDF5 reader accepts beyond the files it writes itself: the `classes` attribute in
// every string type other writers use, a skipped optional filter; and paths that are no file.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/stat.h>

#include <filesystem>

#include "ringtrain/core/error.hpp"
#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/data/synthetic.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

using test::temp_path;

// A valid file of three classes with names written by ringtrain itself.
std::string write_three_classes(const std::string& name) {
  SynthConfig c;
  c.train_count = 12;
  c.test_count = 6;
  c.height = c.width = 4;
  c.classes = 3;
  const std::string path = temp_path(name);
  write_hdf5_dataset(path, make_synthetic(c));
  return path;
}

const std::vector<std::string> kNames = {"cat", "caf\xC3\xA9", "\xE6\x97\xA5\xE6\x9C\xAC"};

struct StringType {
  const char* name;
  bool variable;
  H5T_cset_t cset;
  H5T_str_t pad;
};

// Replaces the `classes` attribute by kNames stored as `t`.
void write_classes(const std::string& path, const StringType& t) {
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  ASSERT_GE(H5Adelete(file, "classes"), 0);
  const size_t size = 8;  // the longest name is 6 bytes
  hid_t type = H5Tcopy(H5T_C_S1);
  ASSERT_GE(H5Tset_size(type, t.variable ? H5T_VARIABLE : size), 0);
  ASSERT_GE(H5Tset_cset(type, t.cset), 0);
  if (!t.variable) {
    ASSERT_GE(H5Tset_strpad(type, t.pad), 0);
  }
  const hsize_t n = kNames.size();
  hid_t space = H5Screate_simple(1, &n, nullptr);
  hid_t attr = H5Acreate2(file, "classes", type, space, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(attr, 0);
  std::vector<const char*> pointers;
  std::string fixed;
  for (const auto& name : kNames) {
    pointers.push_back(name.c_str());
    // Each name padded to `size` with the padding the type declares.
    fixed += name + std::string(size - name.size(), t.pad == H5T_STR_SPACEPAD ? ' ' : '\0');
  }
  ASSERT_GE(H5Awrite(attr, type,
                     t.variable ? static_cast<const void*>(pointers.data())
                                : static_cast<const void*>(fixed.data())),
            0);
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
  H5Fclose(file);
}

class ClassNames : public ::testing::TestWithParam<StringType> {};

TEST_P(ClassNames, AreReadInEveryStringType) {
  const std::string path = write_three_classes(std::string(GetParam().name) + ".h5");
  write_classes(path, GetParam());
  EXPECT_EQ(read_hdf5_dataset(path).class_names, kNames);
}

INSTANTIATE_TEST_SUITE_P(
    Types, ClassNames,
    ::testing::Values(StringType{"variable_ascii", true, H5T_CSET_ASCII, H5T_STR_NULLTERM},
                      StringType{"variable_utf8", true, H5T_CSET_UTF8, H5T_STR_NULLTERM},
                      StringType{"fixed_ascii_nullterm", false, H5T_CSET_ASCII, H5T_STR_NULLTERM},
                      StringType{"fixed_utf8_nullpad", false, H5T_CSET_UTF8, H5T_STR_NULLPAD},
                      StringType{"fixed_ascii_spacepad", false, H5T_CSET_ASCII, H5T_STR_SPACEPAD},
                      StringType{"fixed_utf8_spacepad", false, H5T_CSET_UTF8, H5T_STR_SPACEPAD}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Hdf5Files, RoundTripOfClassNamesKeepsUtf8) {
  SynthConfig c;
  c.train_count = 6;
  c.test_count = 3;
  c.height = c.width = 4;
  c.classes = 3;
  Dataset d = make_synthetic(c);
  d.class_names = kNames;
  const std::string path = temp_path("utf8_roundtrip.h5");
  write_hdf5_dataset(path, d);
  EXPECT_EQ(read_hdf5_dataset(path).class_names, kNames);
}

// An optional filter the writer lacked is skipped and so marked in each chunk: the file reads.
TEST(Hdf5Files, SkippedOptionalFilterIsNoReasonToRefuse) {
  if (H5Zfilter_avail(32000) != 0) GTEST_SKIP() << "this HDF5 library has LZF (filter 32000)";
  const std::string path = write_three_classes("optional_filter.h5");
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  ASSERT_GE(H5Ldelete(file, "/train/images", H5P_DEFAULT), 0);
  const hsize_t dims[4] = {12, 4, 4, 3}, chunk[4] = {4, 4, 4, 3};
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  ASSERT_GE(H5Pset_chunk(dcpl, 4, chunk), 0);
  ASSERT_GE(H5Pset_filter(dcpl, 32000, H5Z_FLAG_OPTIONAL, 0, nullptr), 0);
  hid_t space = H5Screate_simple(4, dims, nullptr);
  hid_t ds = H5Dcreate2(file, "/train/images", H5T_STD_U8LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ASSERT_GE(ds, 0);
  std::vector<uint8_t> pixels(12 * 4 * 4 * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i);
  ASSERT_GE(H5Dwrite(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, pixels.data()), 0);
  H5Dclose(ds);
  H5Sclose(space);
  H5Pclose(dcpl);
  H5Fclose(file);
  EXPECT_EQ(read_hdf5_dataset(path).train.images, pixels);
}

void expect_refused(const std::string& path, const std::string& expected) {
  try {
    read_hdf5_dataset(path);
    FAIL() << path << " was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.what(), "data: " + path + ": " + expected);
  }
}

TEST(Hdf5Files, DirectoryIsNamedAsSuch) {
  const std::string dir = temp_path("a_folder.h5");
  std::filesystem::create_directories(dir);
  expect_refused(dir, "is a directory, not an HDF5 file");
}

TEST(Hdf5Files, DeviceIsNamedAsSuch) {
  expect_refused("/dev/null", "is a character device, not an HDF5 file");
}

// A dataset of two 4x4 images in each split, with `classes` class names "class 0", ...
Dataset tiny_dataset(int classes) {
  SynthConfig c;
  c.train_count = 2;
  c.test_count = 2;
  c.height = c.width = 4;
  Dataset d = make_synthetic(c);
  d.class_names.resize(static_cast<size_t>(classes));
  for (int i = 0; i < classes; ++i) d.class_names[i] = "class " + std::to_string(i);
  return d;
}

// Note: HDF5 keeps an attribute in its object's header, whose messages hold at most 64 KiB: in
// the original file format, some 4,090 names. The writer keeps them out of the header.
TEST(Hdf5Files, AsManyClassNamesAsTheReaderTakesRoundTrip) {
  const Dataset d = tiny_dataset(kMaxClasses);
  const std::string path = temp_path("most_classes.h5");
  write_hdf5_dataset(path, d);
  EXPECT_EQ(read_hdf5_dataset(path).class_names, d.class_names);
}

TEST(Hdf5Files, WriterRefusesMoreClassesThanTheReaderTakes) {
  const std::string path = temp_path("too_many_classes.h5");
  std::filesystem::remove(path);
  EXPECT_THROW(write_hdf5_dataset(path, tiny_dataset(kMaxClasses + 1)), Error);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(Hdf5Files, ClassNamesEqualInNfcAreRefusedNamingBoth) {
  Dataset d = tiny_dataset(3);
  d.class_names = {"caf\xC3\xA9", "dog", "cafe\xCC\x81"};  // composed, then decomposed
  const std::string path = temp_path("nfc_twins.h5");
  write_hdf5_dataset(path, d);
  try {
    read_hdf5_dataset(path);
    ADD_FAILURE() << "read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("attribute classes: names 0 'caf\xC3\xA9' and 2 "
                                         "'cafe\xCC\x81' are the same name"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ringtrain
