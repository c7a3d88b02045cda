// The GEMM choice of the CPU backend, measured: oneDNN's dnnl_sgemm against OpenBLAS's
// cblas_sgemm on the shapes ResNet convolutions produce, single-threaded (as the backend calls
// them). Run it with and without OPENBLAS_CORETYPE set to see OpenBLAS's CPU detection at work.
//   build/bench/bench_gemm
// With --peak, the machine's practical f32 peak instead: oneDNN's square SGEMM on --threads
// threads, the yardstick for a training step's achieved GFLOP/s (bench/compare_cpu.py).
//   build/bench/bench_gemm --peak --threads 2
#include <cblas.h>
#include <dnnl.h>
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

template <class F>
double gflops(int m, int n, int k, F&& gemm) {
  std::vector<double> times;
  for (int rep = 0; rep < 7; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    gemm();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return 2.0 * m * n * k / times[times.size() / 2] * 1e-9;
}

void check(dnnl_status_t status) {
  if (status == dnnl_success) return;
  std::fprintf(stderr, "bench_gemm: dnnl_sgemm failed with status %d\n", int(status));
  std::exit(1);
}

int print_peak(int threads) {
  omp_set_num_threads(threads);
  const int n = 2048;
  std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n);
  const auto sgemm = [&] {
    check(dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n));
  };
  sgemm();  // the first call JIT-compiles its kernel
  std::printf("square sgemm %d on %d threads: %.1f GF/s\n", n, threads, gflops(n, n, n, sgemm));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "oneDNN sgemm against OpenBLAS on the GEMM shapes of ResNet's convolutions, one thread "
      "each: time per call and their ratio"};
  bool peak = false;
  int threads = 1;
  app.add_flag("--peak", peak, "only oneDNN's square SGEMM (2048), on --threads threads");
  app.add_option("--threads", threads, "threads of the --peak GEMM")->check(CLI::Range(1, 1024));
  CLI11_PARSE(app, argc, argv);
  if (peak) return print_peak(threads);
  omp_set_num_threads(1);
  openblas_set_num_threads(1);
  struct Shape {
    int m, n, k;
    const char* what;
  };
  const Shape shapes[] = {{64, 1024, 576, "3x3 conv 64->64 on 32x32"},
                          {256, 1024, 64, "1x1 conv 64->256 on 32x32"},
                          {128, 512, 1152, "3x3 conv 128->128 on 16x16, 2 images"},
                          {512, 512, 4608, "3x3 conv 512->512 on 4x4, 32 images"},
                          {2048, 2048, 2048, "square"}};
  std::printf("OpenBLAS core: %s\n", openblas_get_corename());
  std::printf("%-40s %12s %12s %8s\n", "shape (m n k)", "oneDNN", "OpenBLAS", "ratio");
  for (const Shape& s : shapes) {
    std::vector<float> a(size_t(s.m) * s.k, 0.5f), b(size_t(s.k) * s.n, 0.25f),
        c(size_t(s.m) * s.n);
    const double dnnl = gflops(s.m, s.n, s.k, [&] {
      check(dnnl_sgemm('N', 'N', s.m, s.n, s.k, 1.0f, a.data(), s.k, b.data(), s.n, 0.0f, c.data(),
                       s.n));
    });
    const double blas = gflops(s.m, s.n, s.k, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, a.data(), s.k,
                  b.data(), s.n, 0.0f, c.data(), s.n);
    });
    std::printf("%-40s %8.1f GF/s %8.1f GF/s %7.2fx   %d %d %d\n", s.what, dnnl, blas, dnnl / blas,
                s.m, s.n, s.k);
  }
  return 0;
}
