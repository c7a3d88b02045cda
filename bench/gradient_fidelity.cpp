// One batch's parameter gradients of a ResNet in f32 and in f64 on the CPU backend, from the
// same f32 weights: writes them with the weights and the names for bench/gradient_fidelity.py,
// which measures both against PyTorch's f64 and PyTorch's own f32 on the same weights and images.
//   build/bench/gradient_fidelity --images DIR/images.f32 --labels DIR/labels.i32 --out DIR
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <vector>

#include "ringtrain/backend/cpu/cpu_backend.hpp"
#include "ringtrain/core/error.hpp"
#include "ringtrain/core/input_file.hpp"
#include "ringtrain/core/output_file.hpp"
#include "ringtrain/nn/forward_backward.hpp"

using namespace ringtrain;

namespace {

// Reads the whole of `path`, which must hold exactly `bytes` bytes.
void read_file(const std::string& path, const std::string& flag, void* data, size_t bytes) {
  const int64_t size = check_input_file(path, flag, "a raw array");
  RT_CHECK(size == static_cast<int64_t>(bytes), flag, " ", path, ": holds ", size,
           " bytes, not the ", bytes, " that --batch-size and --image-size ask for");
  std::ifstream in(path, std::ios::binary);
  in.read(static_cast<char*>(data), static_cast<std::streamsize>(bytes));
  RT_CHECK(in.gcount() == static_cast<std::streamsize>(bytes), flag, " ", path,
           ": could not read it");
}

void write_file(const std::string& path, const void* data, size_t bytes) {
  OutputStream out(path, "--out", false);
  out.write(std::string(static_cast<const char*>(data), bytes));
  out.close();
}

// Every parameter's values of one kind (param or grad), in registration order, as T.
template <class T>
std::vector<T> concatenated(const ParameterSet& p, bool grads) {
  std::vector<T> all;
  for (size_t id = 0; id < p.param_infos().size(); ++id) {
    const Tensor t = grads ? p.grad(static_cast<int>(id)) : p.param(static_cast<int>(id));
    all.insert(all.end(), t.data<T>(), t.data<T>() + t.numel());
  }
  return all;
}

struct Options {
  ResNetConfig model;
  int batch = 64, size = 32, threads = 0;
  uint64_t seed = 3;
  std::string images, labels, out;
};

// Both models' gradients of the batch, from the f32 model's initial weights.
void run(const Options& o) {
  Tensor images = Tensor::zeros({o.batch, 3, o.size, o.size}, DType::f32);
  Tensor labels = Tensor::zeros({o.batch}, DType::i32);
  read_file(o.images, "--images", images.raw(), images.nbytes());
  read_file(o.labels, "--labels", labels.raw(), labels.nbytes());
  CpuBackend backend(o.threads), reference(o.threads, DType::f64);
  ResNet model(o.model, backend, DType::f32, o.seed);
  ResNet ref(o.model, reference, DType::f64, o.seed);
  ParameterSet &p = model.parameters(), &r = ref.parameters();
  reference.cast(p.flat_params(), r.flat_params());
  r.refresh_weights(reference);
  Tensor images64 = Tensor::zeros(images.shape(), DType::f64);
  reference.cast(images, images64);
  forward_backward(model, images, labels, LossSettings{});
  forward_backward(ref, images64, labels, LossSettings{});

  const std::vector<float> params = concatenated<float>(p, false),
                           g32 = concatenated<float>(p, true);
  const std::vector<double> g64 = concatenated<double>(r, true);
  write_file(o.out + "/params.f32", params.data(), params.size() * sizeof(float));
  write_file(o.out + "/g32.f32", g32.data(), g32.size() * sizeof(float));
  write_file(o.out + "/g64.f64", g64.data(), g64.size() * sizeof(double));
  std::string names;
  for (const ParamInfo& info : p.param_infos()) names += info.name + "\n";
  write_file(o.out + "/names.txt", names.data(), names.size());
  double err = 0, norm = 0;
  for (size_t i = 0; i < g64.size(); ++i) {
    err += (g32[i] - g64[i]) * (g32[i] - g64[i]);
    norm += g64[i] * g64[i];
  }
  std::printf("resnet%d width %g seed %llu: f32 gradients' relative L2 error against f64 %.3g\n",
              o.model.depth, o.model.width, static_cast<unsigned long long>(o.seed),
              std::sqrt(err / norm));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.model.depth = 50;
  o.model.width = 0.25;
  CLI::App app{"f32 and f64 gradients of one batch, for bench/gradient_fidelity.py"};
  app.add_option("--depth", o.model.depth)->capture_default_str();
  app.add_option("--width", o.model.width)->capture_default_str();
  app.add_option("--batch-size", o.batch)->capture_default_str()->check(CLI::Range(1, 1 << 16));
  app.add_option("--image-size", o.size)->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--seed", o.seed, "initialisation seed")->capture_default_str();
  app.add_option("--threads", o.threads, "0: all hardware threads")->capture_default_str();
  app.add_option("--images", o.images, "raw f32 [N,3,H,W]")->required();
  app.add_option("--labels", o.labels, "raw i32 [N]")->required();
  app.add_option("--out", o.out, "folder for params.f32, g32.f32, g64.f64 and names.txt")
      ->required();
  CLI11_PARSE(app, argc, argv);
  try {
    run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gradient_fidelity: %s\n", e.what());
    return 1;
  }
  return 0;
}
