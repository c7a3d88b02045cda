#pragma once
// A trained model applied to image files (`ringtrain predict`), and the backend that `eval` and
// `predict` run a checkpoint's model on.
#include <memory>
#include <string>
#include <vector>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/checkpoint/model_file.hpp"
#include "ringtrain/data/dataset.hpp"
#include "ringtrain/distributed/world.hpp"
#include "ringtrain/import/image_decode.hpp"

namespace ringtrain {

// The backend a trained model runs on: `device` is "auto" (CUDA when a GPU is visible), "cpu"
// (with `threads` threads, 0: all) or "cuda" (this rank's GPU, as training assigns it). It
// computes in f32 on either, so that results do not depend on a mixed-precision setting.
// Throws an Error when "cuda" is asked for and no GPU is visible.
std::unique_ptr<Backend> make_inference_backend(const std::string& device, int threads,
                                                const World& world);

// One channel from RGB with PIL's convert("L") weights (ITU-R 601-2 luma, rounded to nearest):
// L = (19595 R + 38470 G + 7471 B + 32768) >> 16. A gray pixel (R = G = B) keeps its value.
std::vector<uint8_t> to_grayscale(const RgbImage& image);

// The image file at `path` as the model's input: decoded (decode_image), scaled to cover
// height x width and centre-cropped (resize_and_crop, as `data import-images --size` does),
// and converted to `channels` (3, or 1 with to_grayscale). Throws an Error naming the file.
std::vector<uint8_t> load_image_for_model(const std::string& path, int height, int width,
                                          int channels);

// What the model says about one image file: its classes, most probable first, with their
// softmax probabilities; or why the file could not be read.
struct Prediction {
  std::string path;
  std::string error;  // non-empty: the file could not be read, and the rest is empty
  std::vector<int> classes;
  std::vector<double> probabilities;
};

// The softmax probabilities of one row of logits, computed in double.
std::vector<double> softmax(const float* logits, int classes);

// The top min(top, classes) classes of each image at `paths`, prepared with
// load_image_for_model for the checkpoint's image size and channels, normalised with its mean
// and std and run through the model in inference mode (in batches of `batch_size`). A file that
// cannot be read gets a Prediction with its error; the others are still predicted.
std::vector<Prediction> predict_images(LoadedModel& loaded, Backend& backend,
                                       const std::vector<std::string>& paths, int top,
                                       int batch_size = 64);

}  // namespace ringtrain
