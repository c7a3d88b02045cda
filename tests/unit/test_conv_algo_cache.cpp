// The file of cuDNN algorithm choices that processes share (backend/cuda/conv_algo_cache), with a
// fake search in place of cuDNN's: hits, misses, the workspace limit, a file from another GPU,
// a corrupt, oversized or unwritable file, a FIFO, a lock held too long or planted as a link, and
// several writers at once.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "ringtrain/backend/cuda/conv_algo_cache.hpp"
#include "test_util.hpp"

namespace ringtrain {
namespace {

const ConvAlgoContext kH200{"NVIDIA H200", 91000};

ConvKey key_of(int n, ConvPass pass = ConvPass::forward, DType dtype = DType::bf16) {
  ConvKey key;
  key.g = ConvGeometry{n, 64, 8, 8, 128, 3, 3, 2, 1};
  key.pass = pass;
  key.dtype = dtype;
  return key;
}

// A search that counts its calls and finds algorithm `algo`.
struct FakeSearch {
  int algo = 7;
  std::size_t workspace = 1 << 20;
  int calls = 0;
  std::optional<ConvChoice> operator()() {
    ++calls;
    return ConvChoice{algo, 1, workspace, 64, 0.25f};
  }
};

// The notes a file sends, collected.
struct Notes {
  std::vector<std::string> texts;
  ConvAlgoNote sink() {
    return [this](const std::string& t) { texts.push_back(t); };
  }
};

std::string fresh_path(const std::string& name) {
  const std::string path = test::temp_path(name);
  std::filesystem::remove(path);
  return path;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::optional<ConvChoice> lookup(ConvAlgoFile* file, const ConvKey& key, FakeSearch& search,
                                 std::size_t limit = std::size_t{256} << 20) {
  return find_or_search(file, key, limit, [&] { return search(); });
}

TEST(ConvAlgoFile, AMissIsSearchedOnceAndAnotherProcessFindsItInTheFile) {
  const std::string path = fresh_path("algos_miss.json");
  FakeSearch search;
  Notes notes;
  ConvAlgoFile first(path, kH200, notes.sink());
  EXPECT_EQ(lookup(&first, key_of(32), search)->algo, 7);
  EXPECT_EQ(lookup(&first, key_of(32), search)->algo, 7);
  EXPECT_EQ(search.calls, 1);

  ConvAlgoFile second(path, kH200, notes.sink());
  ASSERT_EQ(second.size(), 1u);
  const std::optional<ConvChoice> c = lookup(&second, key_of(32), search);
  EXPECT_EQ(search.calls, 1);  // the file answered
  EXPECT_EQ(c->algo, 7);
  EXPECT_EQ(c->math_type, 1);
  EXPECT_EQ(c->workspace, std::size_t{1} << 20);
  EXPECT_EQ(c->channels, 64);
  EXPECT_FLOAT_EQ(c->time_ms, 0.25f);
  lookup(&second, key_of(32, ConvPass::backward_filter), search);
  lookup(&second, key_of(32, ConvPass::forward, DType::f32), search);
  lookup(&second, key_of(16), search);
  EXPECT_EQ(search.calls, 4);  // another pass, dtype or batch is another search
  EXPECT_TRUE(notes.texts.empty());
}

TEST(ConvAlgoFile, AStoredChoiceOverTheWorkspaceLimitIsSearchedAgain) {
  const std::string path = fresh_path("algos_limit.json");
  FakeSearch search{3, std::size_t{512} << 20};
  ConvAlgoFile file(path, kH200);
  lookup(&file, key_of(8), search, std::size_t{1} << 30);
  lookup(&file, key_of(8), search, std::size_t{256} << 20);
  EXPECT_EQ(search.calls, 2);
}

TEST(ConvAlgoFile, AFileFromAnotherGpuOrCudnnIsIgnoredWithANoteAndReplaced) {
  const std::string path = fresh_path("algos_stale.json");
  const ConvAlgoContext h100{"NVIDIA H100", 91000};
  for (const ConvAlgoContext& other : {kH200, ConvAlgoContext{"NVIDIA H100", 90100}}) {
    std::filesystem::remove(path);
    FakeSearch search;
    ConvAlgoFile measured(path, h100);
    lookup(&measured, key_of(8), search);
    Notes notes;
    ConvAlgoFile file(path, other, notes.sink());
    EXPECT_EQ(file.size(), 0u);
    ASSERT_EQ(notes.texts.size(), 1u);
    EXPECT_NE(notes.texts[0].find("measured on NVIDIA H100 with cuDNN 91000"), std::string::npos)
        << notes.texts[0];
    EXPECT_NE(notes.texts[0].find(path), std::string::npos);
    lookup(&file, key_of(8), search);
    EXPECT_EQ(search.calls, 2);
    Notes again;
    EXPECT_EQ(ConvAlgoFile(path, other, again.sink()).size(), 1u);  // replaced by this context's
    EXPECT_TRUE(again.texts.empty());
  }
}

TEST(ConvAlgoFile, ACorruptFileIsIgnoredWithANoteAndRewritten) {
  for (const std::string text :
       {"{not json", "", "{\"format\": \"something else\"}",
        R"({"format": "ringtrain conv algorithms 1", "gpu": "NVIDIA H200", "cudnn": 91000,
            "entries": [{"pass": "conv_forward", "dtype": "q7", "layout": "nhwc"}]})"}) {
    const std::string path = fresh_path("algos_corrupt.json");
    write_text(path, text);
    Notes notes;
    FakeSearch search;
    ConvAlgoFile file(path, kH200, notes.sink());
    ASSERT_EQ(notes.texts.size(), 1u) << text;
    EXPECT_NE(notes.texts[0].find("ignored"), std::string::npos) << notes.texts[0];
    EXPECT_EQ(lookup(&file, key_of(4), search)->algo, 7);
    EXPECT_EQ(search.calls, 1);
    Notes again;
    EXPECT_EQ(ConvAlgoFile(path, kH200, again.sink()).size(), 1u);
    EXPECT_TRUE(again.texts.empty()) << text;
  }
}

TEST(ConvAlgoFile, AnUnwritableFileNotesOnceAndTheSearchStillAnswers) {
  const std::string blocker = fresh_path("algos_blocker");
  write_text(blocker, "a file where a folder should be");
  Notes notes;
  FakeSearch search;
  ConvAlgoFile file(blocker + "/algos.json", kH200, notes.sink());
  EXPECT_EQ(lookup(&file, key_of(2), search)->algo, 7);
  EXPECT_EQ(lookup(&file, key_of(3), search)->algo, 7);
  EXPECT_EQ(lookup(&file, key_of(2), search)->algo, 7);
  EXPECT_EQ(search.calls, 2);  // still cached in memory
  ASSERT_EQ(notes.texts.size(), 1u);
  EXPECT_NE(notes.texts[0].find("cannot be written"), std::string::npos) << notes.texts[0];
}

TEST(ConvAlgoFile, AFifoAtThePathIsNeitherReadNorWaitedOn) {
  const std::string path = fresh_path("algos_fifo");
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  Notes notes;
  FakeSearch search;
  ConvAlgoFile file(path, kH200, notes.sink());
  ASSERT_FALSE(notes.texts.empty());
  EXPECT_NE(notes.texts[0].find("not a regular file"), std::string::npos) << notes.texts[0];
  EXPECT_EQ(lookup(&file, key_of(1), search)->algo, 7);
  std::filesystem::remove(path);
}

// A process stopped while it holds the lock (here: this test, through a descriptor of its own)
// delays another one's write by the bounded wait only: one note naming the lock file (and its
// holder where /proc/locks tells), the search still answers, and no further waits.
TEST(ConvAlgoFile, ALockHeldTooLongIsGivenUpWithANote) {
  const std::string path = fresh_path("algos_locked.json");
  const int holder = open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(holder, 0);
  ASSERT_EQ(flock(holder, LOCK_EX), 0);
  Notes notes;
  FakeSearch search;
  ConvAlgoFile file(path, kH200, notes.sink(), std::chrono::milliseconds(100));
  EXPECT_EQ(lookup(&file, key_of(1), search)->algo, 7);
  EXPECT_EQ(lookup(&file, key_of(2), search)->algo, 7);
  ASSERT_EQ(notes.texts.size(), 1u);
  EXPECT_NE(notes.texts[0].find("another process holds its lock " + path + ".lock"),
            std::string::npos)
      << notes.texts[0];
  EXPECT_FALSE(std::filesystem::exists(path));
  close(holder);
}

// The lock file is never opened through a symbolic link (which would create or lock a file
// elsewhere): the write is given up with a note, the link's target is not created.
TEST(ConvAlgoFile, ALockFileThatIsALinkIsNotFollowed) {
  const std::string path = fresh_path("algos_link_lock.json");
  const std::string elsewhere = fresh_path("algos_elsewhere");
  std::filesystem::remove(path + ".lock");
  std::filesystem::create_symlink(elsewhere, path + ".lock");
  Notes notes;
  FakeSearch search;
  ConvAlgoFile file(path, kH200, notes.sink());
  EXPECT_EQ(lookup(&file, key_of(1), search)->algo, 7);
  ASSERT_EQ(notes.texts.size(), 1u);
  EXPECT_NE(notes.texts[0].find(path + ".lock"), std::string::npos) << notes.texts[0];
  EXPECT_FALSE(std::filesystem::exists(elsewhere));
  std::filesystem::remove(path + ".lock");
}

// A file over the size limit is ignored with a note, not read whole.
TEST(ConvAlgoFile, AFileOverTheSizeLimitIsIgnoredWithANote) {
  const std::string path = fresh_path("algos_huge.json");
  {
    std::ofstream out(path);
    out << "{\"format\": \"ringtrain conv algorithms 1\", \"pad\": \"";
  }
  std::filesystem::resize_file(path, ConvAlgoFile::kMaxFileBytes + 1);
  Notes notes;
  const ConvAlgoFile file(path, kH200, notes.sink());
  EXPECT_EQ(file.size(), 0u);
  ASSERT_EQ(notes.texts.size(), 1u);
  EXPECT_NE(notes.texts[0].find("over the " + std::to_string(ConvAlgoFile::kMaxFileBytes)),
            std::string::npos)
      << notes.texts[0];
  std::filesystem::remove(path);
}

TEST(ConvAlgoFile, WritersAtOnceKeepEveryOnesEntries) {
  const std::string path = fresh_path("algos_writers.json");
  constexpr int kWriters = 4, kKeys = 12;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      ConvAlgoFile file(path, kH200);
      FakeSearch search{w};
      for (int i = 0; i < kKeys; ++i) lookup(&file, key_of(1 + w * kKeys + i), search);
    });
  for (std::thread& t : writers) t.join();
  const ConvAlgoFile all(path, kH200);
  ASSERT_EQ(all.size(), std::size_t{kWriters * kKeys});
  for (int w = 0; w < kWriters; ++w)
    for (int i = 0; i < kKeys; ++i) EXPECT_EQ(all.find(key_of(1 + w * kKeys + i))->algo, w);
}

TEST(ConvAlgoFile, WithoutAFileEverySearchRuns) {
  FakeSearch search;
  lookup(nullptr, key_of(8), search);
  lookup(nullptr, key_of(8), search);
  EXPECT_EQ(search.calls, 2);
}

}  // namespace
}  // namespace ringtrain
