// The safetensors format (round trip, byte layout, refusals of broken files) and torchvision's
// names of ringtrain's ResNet, against lists written from torchvision's own model definition.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/exchange/safetensors.hpp"
#include "ringtrain/exchange/torchvision_names.hpp"
#include "ringtrain/nn/resnet.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

using test::temp_path;

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// An 8-byte little-endian length, then `header`, then `data`.
std::string raw_file(const std::string& header, const std::string& data, uint64_t length) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>(length >> (8 * i));
  return out + header + data;
}

std::string read_error(const std::string& path) {
  try {
    read_safetensors(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Safetensors, TensorsAndMetadataRoundTripInTheFormatsLayout) {
  const float values[6] = {1.5f, -2.0f, 0.0f, 3.25f, 1e-30f, -0.0f};
  SafeTensors file;
  file.tensors = {f32_tensor("a.weight", {2, 3}, values), i64_scalar("a.count", -7)};
  file.metadata = {{"class_names", "[\"chat\",\"\xc3\xa9t\xc3\xa9\"]"}, {"depth", "18"}};
  const std::string path = temp_path("round.safetensors");
  write_safetensors(path, file);
  const std::vector<char> bytes = file_bytes(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);  // the data starts 8-byte aligned
  EXPECT_EQ(bytes[8], '{');
  ASSERT_EQ(bytes.size(), 8 + n + 6 * 4 + 8);
  EXPECT_EQ(std::memcmp(bytes.data() + 8 + n, values, sizeof(values)), 0);  // raw, in order
  const SafeTensors back = read_safetensors(path);
  ASSERT_EQ(back.tensors.size(), 2u);
  EXPECT_EQ(back.tensors[0].name, "a.weight");  // the header keeps the writer's order
  EXPECT_EQ(back.tensors[0].shape, (Shape{2, 3}));
  EXPECT_EQ(back.tensors[0].bytes, file.tensors[0].bytes);
  EXPECT_EQ(back.tensors[1].dtype, SafeDType::i64);
  EXPECT_EQ(back.tensors[1].shape, Shape{});
  int64_t count = 0;
  std::memcpy(&count, back.tensors[1].bytes.data(), 8);
  EXPECT_EQ(count, -7);
  EXPECT_EQ(back.metadata, file.metadata);
  EXPECT_TRUE(is_safetensors(path));
}

TEST(Safetensors, BrokenFilesAreRefusedWithTheProblemNamed) {
  const std::string path = temp_path("broken.safetensors");
  write_bytes(path, "");
  EXPECT_NE(read_error(path).find("too short for a safetensors file"), std::string::npos);
  write_bytes(path, "this is not a safetensors file at all");
  EXPECT_NE(read_error(path).find("the header length 2338328219631577204 is over the format's "
                                  "limit"),
            std::string::npos);
  EXPECT_FALSE(is_safetensors(path));
  write_bytes(path, raw_file("{\"a\": [", "", 7));
  EXPECT_NE(read_error(path).find("the header is not JSON"), std::string::npos);
  const std::string entry = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  write_bytes(path, raw_file(entry, std::string(16, '\0'), entry.size()));
  EXPECT_EQ(read_error(path), "no error");
  write_bytes(path, raw_file(entry, std::string(12, '\0'), entry.size()));  // truncated data
  EXPECT_NE(read_error(path).find("tensor w: data_offsets [0, 16] point past the end of the data "
                                  "(12 bytes)"),
            std::string::npos);
  write_bytes(path, raw_file(entry, std::string(16, '\0'), 1000));  // length past the end
  EXPECT_NE(read_error(path).find("the header length 1000 does not fit the file"),
            std::string::npos);
  const std::string half = R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})";
  write_bytes(path, raw_file(half, std::string(4, '\0'), half.size()));
  EXPECT_NE(read_error(path).find("tensor w has dtype F16; ringtrain reads F32 and I64"),
            std::string::npos);
  const std::string odd = R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})";
  write_bytes(path, raw_file(odd, std::string(8, '\0'), odd.size()));
  EXPECT_NE(read_error(path).find("hold 8 bytes, its shape [3] of F32 needs 12"),
            std::string::npos);
  const std::string bare = R"({"w":{"shape":[1],"data_offsets":[0,4]}})";
  write_bytes(path, raw_file(bare, std::string(4, '\0'), bare.size()));
  EXPECT_NE(read_error(path).find("lacks dtype, shape or data_offsets"), std::string::npos);
  EXPECT_NE(read_error(temp_path("absent.safetensors")).find("no such file"), std::string::npos);
}

// A header of F32 tensors NAME -> [begin, end) (each shape [bytes / 4]), in the order given.
std::string header_of(const std::vector<std::pair<std::string, std::pair<int, int>>>& tensors) {
  std::string header = "{";
  for (const auto& [name, range] : tensors)
    header += str_cat(header.size() > 1 ? "," : "", "\"", name, "\":{\"dtype\":\"F32\",\"shape\":[",
                      (range.second - range.first) / 4, "],\"data_offsets\":[", range.first, ",",
                      range.second, "]}");
  return header + "}";
}

// The error reading a file of `header` (its true length) and `data` bytes, or "no error".
std::string layout_error(const std::string& header, size_t data) {
  const std::string path = temp_path("layout.safetensors");
  write_bytes(path, raw_file(header, std::string(data, '\0'), header.size()));
  return read_error(path);
}

TEST(Safetensors, TheLayoutIsTheReferenceReadersTensorsBackToBackOverTheWholeData) {
  // Accepted: any header order, and an empty tensor anywhere.
  EXPECT_EQ(layout_error(header_of({{"b", {8, 16}}, {"a", {0, 8}}, {"e", {16, 16}}}), 16),
            "no error");
  EXPECT_NE(layout_error(header_of({{"a", {0, 16}}, {"b", {0, 16}}}), 32)
                .find("tensor b: data_offsets [0, 16] overlap the bytes of tensor a, which end "
                      "at byte 16: safetensors tensors lie back to back"),
            std::string::npos);
  EXPECT_NE(layout_error(header_of({{"a", {0, 16}}, {"b", {8, 24}}}), 24)
                .find("tensor b: data_offsets [8, 24] overlap the bytes of tensor a, which end "
                      "at byte 16"),
            std::string::npos);
  EXPECT_NE(layout_error(header_of({{"a", {0, 8}}, {"b", {12, 20}}}), 20)
                .find("tensor b: data_offsets [12, 20] leave bytes [8, 12) after tensor a unused"),
            std::string::npos);
  EXPECT_NE(layout_error(header_of({{"a", {4, 12}}}), 12)
                .find("tensor a: data_offsets [4, 12] leave bytes [0, 4) after the start of the "
                      "data unused"),
            std::string::npos);
  const std::string trailing = layout_error(header_of({{"a", {0, 8}}}), 9);
  EXPECT_NE(trailing.find("the tensors end at byte 8 of the 9-byte data: 1 bytes after them "
                          "belong to no tensor"),
            std::string::npos)
      << trailing;
  EXPECT_NE(trailing.find(temp_path("layout.safetensors")), std::string::npos);
}

TEST(Safetensors, AHeaderLengthOneByteShortIsRefusedNotReadMisaligned) {
  SafeTensors file;
  const float values[3] = {1.0f, 2.0f, 3.0f};
  file.tensors = {f32_tensor("a", {3}, values), f32_tensor("b", {3}, values)};
  const std::string path = temp_path("short.safetensors");
  write_safetensors(path, file);
  std::vector<char> bytes = file_bytes(path);
  ASSERT_EQ(bytes[8 + bytes[0] - 1], ' ');  // the header ends in padding: JSON without it
  --bytes[0];
  write_bytes(path, std::string(bytes.begin(), bytes.end()));
  EXPECT_NE(read_error(path).find("the tensors end at byte 24 of the 25-byte data"),
            std::string::npos)
      << read_error(path);
}

TEST(Safetensors, TheHeaderIsOneJsonObjectOfBoundedLengthWithNoKeyTwice) {
  const std::string path = temp_path("header.safetensors");
  const std::string twice = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                            R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  write_bytes(path, raw_file(twice, std::string(8, '\0'), twice.size()));
  EXPECT_NE(read_error(path).find("the header names 'a' twice"), std::string::npos)
      << read_error(path);
  const std::string field = R"({"a":{"dtype":"F32","shape":[1],"shape":[2],"data_offsets":[0,4]}})";
  write_bytes(path, raw_file(field, std::string(4, '\0'), field.size()));
  EXPECT_NE(read_error(path).find("the header names 'shape' twice"), std::string::npos);
  const std::string meta = R"({"__metadata__":{"k":"1","k":"2"}})";
  write_bytes(path, raw_file(meta, "", meta.size()));
  EXPECT_NE(read_error(path).find("the header names 'k' twice"), std::string::npos);
  write_bytes(path, raw_file("", "{}", 100'000'001));
  EXPECT_NE(read_error(path).find("the header length 100000001 is over the format's limit of "
                                  "100000000 bytes"),
            std::string::npos);
  write_bytes(path, raw_file(" {}", "", 3));
  EXPECT_NE(read_error(path).find("the header does not start with '{'"), std::string::npos);
  write_bytes(path, raw_file("[]", "", 2));
  EXPECT_NE(read_error(path).find("the header does not start with '{'"), std::string::npos);
  const std::string huge = R"({"a":{"dtype":"F32","shape":[1099511627775,1099511627775],)"
                           R"("data_offsets":[0,4]}})";
  write_bytes(path, raw_file(huge, std::string(4, '\0'), huge.size()));
  EXPECT_NE(read_error(path).find("holds more bytes than 64 bits count"), std::string::npos);
}

// torchvision's state_dict of resnet<depth>(num_classes=10) as `NAME [SHAPE]` lines.
std::vector<std::string> torchvision_reference(int depth) {
  std::ifstream in(
      str_cat(RINGTRAIN_TEST_DATA_DIR, "/torchvision_resnet", depth, "_state_dict.txt"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> exported_names(int depth, Stem stem) {
  ResNetConfig c;
  c.depth = depth;
  c.stem = stem;
  c.classes = 10;
  CpuBackend cpu(1);
  ResNet model(c, cpu, DType::f32, 0);
  std::vector<std::string> lines;
  for (const TorchvisionTensor& t : torchvision_tensors(model.parameters()))
    lines.push_back(t.name + " " + shape_str(t.shape));
  return lines;
}

TEST(TorchvisionNames, TheImagenetStemModelIsTorchvisionsStateDictInItsOrder) {
  for (int depth : {18, 50}) {
    const std::vector<std::string> reference = torchvision_reference(depth);
    ASSERT_GT(reference.size(), 100u) << "tests/data lists missing";
    EXPECT_EQ(exported_names(depth, Stem::imagenet), reference) << "resnet" << depth;
  }
}

TEST(TorchvisionNames, TheCifarStemDiffersOnlyInTheDocumentedConv1) {
  for (int depth : {18, 50}) {
    std::vector<std::string> reference = torchvision_reference(depth);
    ASSERT_EQ(reference.at(0), "conv1.weight [64,3,7,7]");
    reference[0] = "conv1.weight [64,3,3,3]";  // nn.Conv2d(3, 64, 3, stride=1, padding=1)
    EXPECT_EQ(exported_names(depth, Stem::cifar), reference) << "resnet" << depth;
  }
}

TEST(TorchvisionNames, EveryNameMapsBackToRingtrainsOwn) {
  ResNetConfig c;
  c.depth = 50;
  c.width = 0.125;
  CpuBackend cpu(1);
  ResNet model(c, cpu, DType::f32, 0);
  const ParameterSet& p = model.parameters();
  for (const auto* infos : {&p.param_infos(), &p.buffer_infos()})
    for (const ParamInfo& info : *infos)
      EXPECT_EQ(ringtrain_name(torchvision_name(info.name)), info.name);
  EXPECT_EQ(torchvision_name("layer3.5.3.bn.running_var"), "layer3.5.bn3.running_var");
  EXPECT_EQ(torchvision_name("layer2.0.shortcut.conv.weight"), "layer2.0.downsample.0.weight");
  EXPECT_EQ(ringtrain_name("layer1.1.bn2.num_batches_tracked"), "");
  EXPECT_EQ(ringtrain_name("avgpool.weight"), "");
  EXPECT_THROW(torchvision_name("head.weight"), Error);
}

}  // namespace
}  // namespace ringtrain
