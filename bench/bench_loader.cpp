// Loader throughput: images/s of full augmentation (crop with padding 4, flip, normalise) into
// batches of 256 in f32 NCHW (the CPU backend) and bf16 NHWC (CUDA), and of the gathering of
// raw uint8 images and their crops that --augment-on device leaves to the loader, for several
// worker counts, against a plain memcpy of the f32 output bytes; plus the time to read the
// whole HDF5 file into memory. Median of the timed epochs.
//   build/bench/bench_loader --images 20000 --workers 0,1,2
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/loader/loader.hpp"
#include "timing.hpp"

using namespace ringtrain;

using bench::Clock;
using bench::median;
using bench::seconds_since;

namespace {

// Median images/s over `epochs` timed epochs (an untimed first one starts the threads).
double loader_rate(const Split& split, const ImageTransform& writer, int batch, int workers,
                   int epochs, Backend& backend) {
  LoaderConfig c;
  c.batch_size = batch;
  c.workers = workers;
  c.persistent_workers = true;
  Loader loader(split, writer, DistributedSampler(split.count, 1, 0, true, ShardTail::drop, 0), c,
                backend);
  std::vector<double> t;
  int64_t n = 0;
  for (int e = 0; e <= epochs; ++e) {
    const auto t0 = Clock::now();
    loader.start_epoch(e);
    n = 0;
    while (const HostBatch* b = loader.next()) n += b->images.dim(0);
    if (e > 0) t.push_back(seconds_since(t0));
  }
  return n / median(t);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t images = 20000;
  int batch = 256, epochs = 5;
  std::vector<int> worker_counts = {0, 1, 2};
  std::string path =
      (std::filesystem::temp_directory_path() / "ringtrain_bench_loader.h5").string();
  CLI::App app{"loader benchmark"};
  app.add_option("--images", images)->capture_default_str();
  app.add_option("--batch-size", batch)->capture_default_str();
  app.add_option("--epochs", epochs, "timed epochs per setting")->capture_default_str();
  app.add_option("--workers", worker_counts)->delimiter(',');
  app.add_option("--file", path)->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  SynthConfig sc;
  sc.train_count = images;
  sc.test_count = 16;
  write_hdf5_dataset(path, make_synthetic(sc));
  std::vector<double> loads;
  Dataset data;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = Clock::now();
    data = read_hdf5_dataset(path);
    loads.push_back(seconds_since(t0));
  }
  std::printf("in-memory load of %lld images (%.1f MB): median %.3f s\n",
              static_cast<long long>(images), data.train.images.size() / 1e6, median(loads));

  CpuBackend backend(1);
  const Normalization norm = channel_statistics(data.train);
  const ImageTransform writer(data.train, norm, 4, DType::f32, Layout::nchw);

  // The floor: copying the same output bytes, batch by batch, from a ready buffer.
  {
    const size_t bytes = static_cast<size_t>(batch) * writer.image_bytes();
    std::vector<char> src(bytes, 1), dst(bytes);
    std::vector<double> t;
    for (int e = 0; e < epochs; ++e) {
      const auto t0 = Clock::now();
      for (int64_t b = 0; b < images / batch; ++b) {
        std::memcpy(dst.data(), src.data(), bytes);
        src[static_cast<size_t>(b) % bytes] = dst[bytes - 1];  // keep the copies observable
      }
      t.push_back(seconds_since(t0));
    }
    std::printf("memcpy of the output bytes:           %10.0f img/s\n",
                (images / batch) * batch / median(t));
  }
  const struct {
    const char* name;
    DType dtype;
    Layout layout;
  } formats[] = {{"augment, f32 NCHW ", DType::f32, Layout::nchw},
                 {"augment, bf16 NHWC", DType::bf16, Layout::nhwc},
                 {"raw u8 + crops    ", DType::u8, Layout::nhwc}};
  for (const auto& f : formats) {
    const ImageTransform w(data.train, norm, 4, f.dtype, f.layout);
    for (int workers : worker_counts)
      std::printf("loader, %d worker(s), %s: %10.0f img/s\n", workers, f.name,
                  loader_rate(data.train, w, batch, workers, epochs, backend));
  }
  return 0;
}
