#include "ringtrain/evaluation/inference.hpp"

#include <algorithm>
#include <cmath>

#include "ringtrain/backend/devices.hpp"
#include "ringtrain/evaluation/evaluation.hpp"
#include "ringtrain/parallel/backends.hpp"

namespace ringtrain {
namespace {

// The images that were read, as a split the evaluation's loader takes (labels unused, 0).
struct ReadImages {
  Split split;
  std::vector<size_t> prediction;  // the Prediction each image of the split belongs to
};

// Note: decode_image words its errors for the importer that shares it ("data import-images:
// PATH: ..."); predict says them as its own.
std::string as_predict_error(const std::string& message) {
  const std::string importer = "data import-images: ";
  const bool shared = message.compare(0, importer.size(), importer) == 0;
  return "predict: " + (shared ? message.substr(importer.size()) : message);
}

ReadImages read_images(const CheckpointMeta& meta, std::vector<Prediction>& out) {
  ReadImages r;
  Split& s = r.split;
  s.height = meta.image_height;
  s.width = meta.image_width;
  s.channels = meta.model_config.in_channels;
  for (size_t i = 0; i < out.size(); ++i) {
    try {
      const std::vector<uint8_t> pixels =
          load_image_for_model(out[i].path, s.height, s.width, s.channels);
      s.images.insert(s.images.end(), pixels.begin(), pixels.end());
      r.prediction.push_back(i);
    } catch (const Error& e) {
      out[i].error = as_predict_error(e.what());
    }
  }
  s.count = static_cast<int64_t>(r.prediction.size());
  s.labels.assign(r.prediction.size(), 0);
  return r;
}

}  // namespace

std::unique_ptr<Backend> make_inference_backend(const std::string& device, int threads,
                                                const World& world) {
  DeviceRequest request;
  request.kind = resolve_device(device, probe_devices());
  request.threads = threads;
  request.compute = DType::f32;
  return make_backend(request, &world);
}

std::vector<uint8_t> to_grayscale(const RgbImage& image) {
  std::vector<uint8_t> gray(image.pixels.size() / 3);
  for (size_t i = 0; i < gray.size(); ++i) {
    const uint32_t r = image.pixels[3 * i], g = image.pixels[3 * i + 1],
                   b = image.pixels[3 * i + 2];
    gray[i] = static_cast<uint8_t>((19595 * r + 38470 * g + 7471 * b + 32768) >> 16);
  }
  return gray;
}

std::vector<uint8_t> load_image_for_model(const std::string& path, int height, int width,
                                          int channels) {
  RT_CHECK(channels == 1 || channels == 3, "predict: a model of ", channels,
           " input channels; images can feed 1 or 3");
  RgbImage image = decode_image(path);
  if (image.height != height || image.width != width) image = resize_and_crop(image, height, width);
  // Note: the importer stores RGB; a grayscale model (trained on 1-channel data) gets the luma
  // PIL's convert("L") gives, which leaves a gray image's pixels as they are.
  return channels == 3 ? image.pixels : to_grayscale(image);
}

std::vector<double> softmax(const float* logits, int classes) {
  const float top = *std::max_element(logits, logits + classes);
  std::vector<double> p(static_cast<size_t>(classes));
  double sum = 0;
  for (int c = 0; c < classes; ++c)
    sum += p[static_cast<size_t>(c)] = std::exp(double(logits[c]) - top);
  for (double& v : p) v /= sum;
  return p;
}

std::vector<Prediction> predict_images(LoadedModel& loaded, Backend& backend,
                                       const std::vector<std::string>& paths, int top,
                                       int batch_size) {
  RT_CHECK_AS(ConfigError, top >= 1, "predict: --top ", top, ": at least 1 class");
  std::vector<Prediction> out(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) out[i].path = paths[i];
  const ReadImages read = read_images(loaded.meta, out);
  if (read.split.count == 0) return out;
  const int classes = loaded.model->config().classes;
  const int k = std::min(top, classes);
  size_t next = 0;  // the loader keeps the split's order: batch rows follow read.prediction
  run_inference(*loaded.model, backend, read.split, loaded.meta.norm,
                EvalSettings{batch_size, 0, nullptr}, 1, 0,
                [&](const Tensor& logits, const Tensor&) {
                  const Tensor host = to_host(backend, logits);
                  for (int64_t i = 0; i < host.dim(0); ++i, ++next) {
                    const float* row = host.data<float>() + i * classes;
                    const std::vector<double> probabilities = softmax(row, classes);
                    Prediction& p = out[read.prediction[next]];
                    p.classes = top_k(row, classes, k);
                    for (int c : p.classes) p.probabilities.push_back(probabilities[size_t(c)]);
                  }
                });
  return out;
}

}  // namespace ringtrain
