// The user's output files (summary, metrics, traces, --out): folders created, appends kept,
// whole files replaced atomically, and every failure naming the flag, the path and the reason;
// the atomic writer's progress calls for large files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ringtrain/core/atomic_file.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/core/json_text.hpp"
#include "ringtrain/core/output_file.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

using test::error_of;

TEST(OutputFile, CreatesFoldersAndAppendsOrTruncates) {
  const std::string path = test::temp_path("output_file/a/b/metrics.jsonl");
  std::filesystem::remove_all(test::temp_path("output_file"));
  {
    std::ofstream out = open_output(path, "--metrics");
    out << "one\n";
    check_output(out, path, "--metrics");
  }
  {
    std::ofstream out = open_output(path, "--metrics", true);
    out << "two\n";
    check_output(out, path, "--metrics");
  }
  EXPECT_EQ(read_all(path), "one\ntwo\n");
  { std::ofstream out = open_output(path, "--metrics"); }
  EXPECT_EQ(read_all(path), "");
}

TEST(OutputFile, WholeFileReplacedAndNoTemporaryLeft) {
  const std::string dir = test::temp_path("output_whole");
  std::filesystem::remove_all(dir);
  const std::string path = dir + "/deep/summary.json";
  write_text_file(path, "{\"a\": 1}\n", "--summary");
  write_text_file(path, "{}\n", "--summary");
  EXPECT_EQ(read_all(path), "{}\n");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/deep")) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST(OutputFile, FolderBlockedByAFileIsNamed) {
  const std::string blocker = test::temp_path("output_blocker");
  std::filesystem::remove_all(blocker);
  std::ofstream(blocker) << "a file where a folder should go";
  const std::string path = blocker + "/sub/summary.json";
  const std::string opened = error_of([&] { open_output(path, "--metrics"); });
  EXPECT_NE(opened.find("--metrics: cannot create the folder " + blocker + "/sub"),
            std::string::npos)
      << opened;
  EXPECT_NE(opened.find("choose a writable path"), std::string::npos) << opened;
  const std::string written = error_of([&] { write_text_file(path, "{}", "--summary"); });
  EXPECT_NE(written.find("--summary: cannot create the folder"), std::string::npos) << written;
}

TEST(OutputFile, UnwritablePathNamesFlagAndReason) {
  const std::string dir = test::temp_path("output_is_dir");
  std::filesystem::create_directories(dir);
  const std::string opened = error_of([&] { open_output(dir, "--metrics"); });
  EXPECT_NE(opened.find("--metrics: cannot open " + dir + " for writing: Is a directory"),
            std::string::npos)
      << opened;
  const std::string written = error_of([&] { write_text_file(dir, "{}", "eval --out"); });
  EXPECT_EQ(written.rfind("eval --out: ", 0), 0u) << written;
}

TEST(OutputFile, FullDiskIsReportedWhenWritten) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  std::ofstream out = open_output("/dev/full", "--metrics", true);
  out << std::string(1 << 16, 'x');
  const std::string failed = error_of([&] { check_output(out, "/dev/full", "--metrics"); });
  EXPECT_NE(failed.find("--metrics: writing /dev/full failed"), std::string::npos) << failed;
}

TEST(AtomicFile, ProgressAfterEvery64MiBAndAtTheEnd) {
  const std::string path = test::temp_path("progress.bin");
  const std::vector<char> image((size_t{150} << 20) + 7, 'x');
  std::vector<std::pair<size_t, size_t>> calls;
  write_file_atomically(path, image,
                        [&](size_t done, size_t total) { calls.emplace_back(done, total); });
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0], std::make_pair(size_t{64} << 20, image.size()));
  EXPECT_EQ(calls[1], std::make_pair(size_t{128} << 20, image.size()));
  EXPECT_EQ(calls[2], std::make_pair(image.size(), image.size()));
  EXPECT_EQ(std::filesystem::file_size(path), image.size());
  std::filesystem::remove(path);
}

// A class name another tool wrote with bytes that are not UTF-8 reaches eval --out and predict
// --json: the JSON is written (valid, the bad bytes as U+FFFD) instead of failing.
TEST(JsonText, BytesThatAreNotUtf8BecomeTheReplacementCharacter) {
  const nlohmann::json names = {"cat", "b\xff\xfe", "\xc3\xa9t\xc3\xa9"};
  EXPECT_THROW(names.dump(), nlohmann::json::type_error);
  const std::string text = json_text(names);
  EXPECT_EQ(text, "[\"cat\",\"b\xef\xbf\xbd\xef\xbf\xbd\",\"\xc3\xa9t\xc3\xa9\"]");
  EXPECT_EQ(nlohmann::json::parse(text)[2], "\xc3\xa9t\xc3\xa9");
}

TEST(JsonText, AnOrderedObjectKeepsItsOrder) {
  nlohmann::ordered_json j;
  j["z"] = 1;
  j["a"] = 2;
  EXPECT_EQ(json_text(j), "{\"z\":1,\"a\":2}");
}

}  // namespace
}  // namespace ringtrain
