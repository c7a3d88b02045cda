#pragma once
// `ringtrain data import-images`: a folder of images in class folders (DIR/train/<class>/...,
// DIR/test/<class>/..., the layout torchvision's ImageFolder reads) to the HDF5 dataset schema.
#include <cstdint>
#include <functional>
#include <string>

#include "ringtrain/data/dataset.hpp"

namespace ringtrain {

struct ImportConfig {
  std::string dir, out;
  int workers = 1;            // decoding threads, the calling one included
  int height = 0, width = 0;  // the stored size; 0: the first train image's, which all must have
  bool force = false;         // replace an existing `out`
  int gzip = 0;
  // Called with the images decoded so far and the total, one call at a time, about every 1%.
  std::function<void(int64_t done, int64_t total)> progress;
};

// A folder's images in memory, and what was passed over.
struct ImageFolder {
  Dataset data;
  int64_t skipped = 0;        // files without a .png, .jpg or .jpeg name, or outside a class folder
  std::string first_skipped;  // the first of them, for the summary
  int64_t links = 0;          // links to folders inside class folders, not followed
  std::string first_link;
};

// What import_image_folder wrote, for its summary.
struct ImportSummary {
  int64_t train = 0, test = 0, skipped = 0, links = 0;
  int classes = 0, height = 0, width = 0;
  std::string first_skipped, first_link;
};

// "HxW" (or "N" for NxN) as height and width, each 1 to 65535; throws a ConfigError otherwise.
void parse_image_size(const std::string& text, int& height, int& width);

// Reads DIR/train and DIR/test as ImageFolder does: the class folders' names, sorted (as bytes,
// which is code point order for UTF-8), are the classes, and must be the same in both splits;
// each class's files with a .png, .jpg or .jpeg name (any case), in it and its subfolders, in
// sorted order (by folder, then name), are its images. Links to folders inside a class folder
// are not followed (a link to the folder itself would list its images again and again): they
// are counted in `links`. Images are decoded over `workers`
// threads into places fixed by that order, so the result does not depend on the thread count;
// each becomes RGB (decode_image) of the configured size (resize_and_crop), or must already
// have the first image's size. Errors name the file or folder and the remedy.
ImageFolder load_image_folder(const ImportConfig& config);

// load_image_folder, then writes config.out (via OUT.tmp and a rename) with these file
// attributes beside `classes`: channel_mean and channel_std (float64 [3], the train images' per-
// channel mean and population standard deviation on the 0-1 scale, as the loader computes
// them), source_dir (the folder's absolute path), importer ("ringtrain data import-images"),
// importer_version (the project version) and content_xxh64 (16 hex digits: XXH64 of the train
// images, train labels, test images and test labels as stored, int32 little-endian labels, each
// seeded with the value so far). An existing output is refused unless config.force, and one
// that cannot be created is refused before any image is decoded.
ImportSummary import_image_folder(const ImportConfig& config);

}  // namespace ringtrain
