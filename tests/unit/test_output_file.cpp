// The user's output files (summary, metrics, traces, --out): folders created, appends kept,
// whole files replaced atomically, and every failure naming the flag, the path and the reason;
// the atomic writer's progress calls for large files.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ringtrain/core/atomic_file.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/core/json_text.hpp"
#include "ringtrain/core/output_file.hpp"
#include "ringtrain/core/temporary_file.hpp"
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
  OutputStream(path, "--metrics", false).write("one\n");
  OutputStream(path, "--metrics", true).write("two\n");
  EXPECT_EQ(read_all(path), "one\ntwo\n");
  { OutputStream out(path, "--metrics", false); }
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
  const std::string opened = error_of([&] { OutputStream(path, "--metrics", false); });
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
  const std::string opened = error_of([&] { OutputStream(dir, "--metrics", false); });
  EXPECT_NE(opened.find("--metrics: " + dir + " is a directory"), std::string::npos) << opened;
  const std::string written = error_of([&] { write_text_file(dir, "{}", "eval --out"); });
  EXPECT_EQ(written.rfind("eval --out: ", 0), 0u) << written;
}

TEST(OutputFile, FullDiskIsReportedWhenWritten) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  OutputStream out("/dev/full", "--metrics", true);
  const std::string failed = error_of([&] { out.write(std::string(1 << 16, 'x')); });
  EXPECT_NE(failed.find("--metrics: writing /dev/full failed"), std::string::npos) << failed;
}

// --metrics, as every other output, refuses a symbolic link to a file and leaves the file as
// it was (it is neither truncated nor written).
TEST(OutputFile, LinkToAFileIsRefusedAndTheFileKept) {
  const std::string dir = test::temp_path("output_link");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/real.jsonl") << "precious\n";
  std::filesystem::create_symlink(dir + "/real.jsonl", dir + "/m.jsonl");
  for (const bool append : {false, true}) {
    const std::string opened =
        error_of([&] { OutputStream(dir + "/m.jsonl", "--metrics", append); });
    EXPECT_NE(opened.find("--metrics: " + dir + "/m.jsonl is a symbolic link to"),
              std::string::npos)
        << opened;
  }
  EXPECT_EQ(read_all(dir + "/real.jsonl"), "precious\n");
}

// A FIFO that no process reads is said at once (no open that waits for a reader for ever), by
// the line writer and by the whole-file writer alike.
TEST(OutputFile, FifoWithoutReaderFailsAtOnce) {
  const std::string fifo = test::temp_path("output_unread.fifo");
  std::filesystem::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THROW(OutputStream(fifo, "--metrics", true), UnreadStreamError);
  const std::string written = error_of([&] { write_text_file(fifo, "{}\n", "--summary"); });
  EXPECT_NE(written.find("--summary: cannot write " + fifo + ": " + fifo +
                         " is a FIFO that no process reads"),
            std::string::npos)
      << written;
  EXPECT_THROW(write_text_file(fifo, "{}\n", "--summary"), UnreadStreamError);
  std::filesystem::remove(fifo);
}

// A FIFO whose reader stopped reading: once the process is stopping, the write gives up instead
// of waiting for room; a reader that closed its end is EPIPE, not SIGPIPE's death.
TEST(OutputFile, FullFifoGivesUpWhenStoppingAndClosedReaderIsAnError) {
  const std::string fifo = test::temp_path("output_full.fifo");
  std::filesystem::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  OutputStream out(fifo, "--metrics", true);
  set_stream_stop_check([] { return true; });
  EXPECT_THROW(out.write(std::string(size_t{4} << 20, 'x')), UnreadStreamError);
  set_stream_stop_check(nullptr);
  ASSERT_EQ(close(reader), 0);
  const std::string broken = error_of([&] { out.write("line\n"); });
  EXPECT_NE(broken.find("Broken pipe"), std::string::npos) << broken;
  std::filesystem::remove(fifo);
}

// Every signal whose default action ends the process removes the temporary file it interrupts
// (an import's OUT.h5.tmp-XXXXXX), and the process still ends by that signal.
TEST(TemporaryFile, RemovedAtEverySignalThatEndsTheProcess) {
  const std::string dir = test::temp_path("signalled");
  for (const int signal : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM,
                           SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO, SIGPWR}) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      const rlimit no_core{0, 0};
      setrlimit(RLIMIT_CORE, &no_core);
      TemporaryFile tmp(dir + "/out.h5");
      raise(signal);
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == signal)
        << strsignal(signal) << ": status " << status;
    EXPECT_TRUE(std::filesystem::is_empty(dir)) << strsignal(signal) << " left a file";
  }
  std::filesystem::remove_all(dir);
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
