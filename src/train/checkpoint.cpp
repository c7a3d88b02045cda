#include "ringtrain/train/checkpoint.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include "ringtrain/core/hdf5_file.hpp"

namespace ringtrain {
namespace {

namespace fs = std::filesystem;
using Handle = Hdf5Handle;

// The checkpoint's groups and, for each, the tensor of a parameter or buffer.
struct Section {
  const char* group;
  const std::vector<ParamInfo>* infos;
  Tensor flat;
};

std::vector<Section> sections(const ParameterSet& params, const Tensor& momentum) {
  ParameterSet& p = const_cast<ParameterSet&>(params);
  return {{"params", &params.param_infos(), p.flat_params()},
          {"momentum", &params.param_infos(), momentum},
          {"buffers", &params.buffer_infos(), p.flat_buffers()}};
}

void write_attr(hid_t file, const char* name, double value) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(file, name, H5T_NATIVE_DOUBLE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
              H5Aclose);
  RT_CHECK(attr.ok() && H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, &value) >= 0,
           "checkpoint: cannot write attribute ", name);
}

void write_attr(hid_t file, const char* name, const std::string& value) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), std::max<size_t>(1, value.size()));
  Handle attr(H5Acreate2(file, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  RT_CHECK(attr.ok() && H5Awrite(attr.get(), type.get(), value.c_str()) >= 0,
           "checkpoint: cannot write attribute ", name);
}

double read_number(hid_t file, const std::string& path, const char* name) {
  Handle attr(H5Aopen(file, name, H5P_DEFAULT), H5Aclose);
  double value = 0;
  RT_CHECK(attr.ok() && H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value) >= 0, "checkpoint: ", path,
           ": attribute ", name, " missing or unreadable");
  return value;
}

std::string read_text(hid_t file, const std::string& path, const char* name) {
  Handle attr(H5Aopen(file, name, H5P_DEFAULT), H5Aclose);
  RT_CHECK(attr.ok(), "checkpoint: ", path, ": attribute ", name, " missing");
  Handle type(H5Aget_type(attr.get()), H5Tclose);
  std::string value(H5Tget_size(type.get()), '\0');
  RT_CHECK(H5Aread(attr.get(), type.get(), value.data()) >= 0, "checkpoint: ", path, ": attribute ",
           name, " unreadable");
  return value.substr(0, value.find('\0'));
}

void write_tensor(hid_t group, const std::string& name, const Tensor& host) {
  std::vector<hsize_t> dims(host.shape().begin(), host.shape().end());
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  Handle ds(H5Dcreate2(group, name.c_str(), H5T_NATIVE_FLOAT, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                       H5P_DEFAULT),
            H5Dclose);
  RT_CHECK(ds.ok() &&
               H5Dwrite(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, host.raw()) >= 0,
           "checkpoint: cannot write ", name);
}

// Opens a dataset and checks its element count; reads it into `host` when given.
void read_tensor(hid_t file, const std::string& path, const std::string& name, int64_t numel,
                 Tensor* host) {
  Handle ds(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  RT_CHECK(ds.ok(), "checkpoint: ", path, ": dataset ", name, " missing");
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  RT_CHECK(H5Sget_simple_extent_npoints(space.get()) == numel, "checkpoint: ", path, ": dataset ",
           name, " has ", H5Sget_simple_extent_npoints(space.get()), " values, expected ", numel);
  if (host)
    RT_CHECK(H5Dread(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, host->raw()) >= 0,
             "checkpoint: ", path, ": dataset ", name, " unreadable (truncated?)");
}

Handle open_checkpoint(const std::string& path) {
  silence_hdf5();
  RT_CHECK(fs::exists(path), "checkpoint: ", path, ": no such file");
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  RT_CHECK(file.ok(), "checkpoint: ", path, ": not an HDF5 file, or torn or truncated");
  return file;
}

// The checkpoints of a folder by step, newest first.
std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  if (!fs::is_directory(dir)) return found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    long long step = 0;
    char tail[8] = {};
    if (std::sscanf(name.c_str(), "ckpt-step%lld.%3s", &step, tail) == 2 &&
        std::string(tail) == "h5" && name.size() == std::string("ckpt-step00000000.h5").size())
      found.emplace_back(step, entry.path().string());
  }
  std::sort(found.rbegin(), found.rend());
  return found;
}

}  // namespace

void write_checkpoint(const std::string& path, Backend& backend, const ParameterSet& params,
                      const Tensor& momentum, const CheckpointMeta& meta) {
  const auto dir = fs::path(path).parent_path();
  if (!dir.empty()) fs::create_directories(dir);
  write_hdf5_atomically(path, [&](hid_t file) {
    for (const Section& s : sections(params, momentum)) {
      Handle group(H5Gcreate2(file, s.group, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
      RT_CHECK(group.ok(), "checkpoint: cannot create group ", s.group);
      for (const ParamInfo& info : *s.infos) {
        Tensor host = Tensor::zeros(info.shape, DType::f32);
        backend.copy(s.flat.slice(info.offset, info.shape), host);
        write_tensor(group.get(), info.name, host);
      }
    }
    write_attr(file, "step", double(meta.step));
    write_attr(file, "epoch", double(meta.epoch));
    write_attr(file, "batch_in_epoch", double(meta.batch_in_epoch));
    write_attr(file, "world_size", double(meta.world_size));
    write_attr(file, "global_batch", double(meta.global_batch));
    write_attr(file, "loss_scale", meta.loss_scale);
    write_attr(file, "loss_scale_clean_steps", double(meta.loss_scale_clean_steps));
    write_attr(file, "model", meta.model);
    write_attr(file, "data", meta.data);
    write_attr(file, "config", meta.config);
    write_attr(file, "version", meta.version);
  });
}

CheckpointMeta read_checkpoint_meta(const std::string& path) {
  Handle file = open_checkpoint(path);
  const hid_t f = file.get();
  CheckpointMeta m;
  m.step = static_cast<int64_t>(read_number(f, path, "step"));
  m.epoch = static_cast<int64_t>(read_number(f, path, "epoch"));
  m.batch_in_epoch = static_cast<int64_t>(read_number(f, path, "batch_in_epoch"));
  m.world_size = static_cast<int>(read_number(f, path, "world_size"));
  m.global_batch = static_cast<int64_t>(read_number(f, path, "global_batch"));
  m.loss_scale = read_number(f, path, "loss_scale");
  m.loss_scale_clean_steps = static_cast<int>(read_number(f, path, "loss_scale_clean_steps"));
  m.model = read_text(f, path, "model");
  m.data = read_text(f, path, "data");
  m.config = read_text(f, path, "config");
  m.version = read_text(f, path, "version");
  return m;
}

void load_checkpoint(const std::string& path, Backend& backend, ParameterSet& params,
                     Tensor& momentum) {
  Handle file = open_checkpoint(path);
  for (const Section& s : sections(params, momentum)) {
    for (const ParamInfo& info : *s.infos) {
      Tensor host = Tensor::zeros(info.shape, DType::f32);
      read_tensor(file.get(), path, str_cat("/", s.group, "/", info.name), host.numel(), &host);
      Tensor dst = s.flat.slice(info.offset, info.shape);
      backend.copy(host, dst);
    }
  }
  params.refresh_weights(backend);
}

std::string checkpoint_path(const std::string& dir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "ckpt-step%08lld.h5", static_cast<long long>(step));
  return (fs::path(dir) / name).string();
}

std::string newest_checkpoint(const std::string& dir, std::vector<std::string>* skipped) {
  for (const auto& [step, path] : list_checkpoints(dir)) {
    try {
      read_checkpoint_meta(path);
      return path;
    } catch (const Error& e) {
      if (skipped) skipped->push_back(e.what());
    }
  }
  return "";
}

void prune_checkpoints(const std::string& dir, int keep) {
  const auto found = list_checkpoints(dir);
  for (size_t i = static_cast<size_t>(std::max(keep, 0)); i < found.size(); ++i)
    fs::remove(found[i].second);
}

std::string checkpoint_mismatch(const CheckpointMeta& saved, const CheckpointMeta& now) {
  if (saved.model != now.model)
    return str_cat("it holds another model (", saved.model, "; this run: ", now.model, ")");
  if (saved.data != now.data)
    return str_cat("it was trained on other data (", saved.data, "; this run: ", now.data, ")");
  if (saved.world_size != now.world_size)
    return str_cat("it was written by ", saved.world_size, " ranks, this run has ", now.world_size);
  return "";
}

}  // namespace ringtrain
