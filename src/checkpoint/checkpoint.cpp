#include "ringtrain/checkpoint/checkpoint.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "ringtrain/checkpoint/loaded_values.hpp"
#include "ringtrain/core/hash.hpp"
#include "ringtrain/core/hdf5_attributes.hpp"
#include "ringtrain/core/hdf5_file.hpp"
#include "ringtrain/core/input_file.hpp"

namespace ringtrain {
namespace {

using Handle = Hdf5Handle;

// Checkpoints written before checksums had no `format` attribute; format 3 added the model,
// image size, class names and normalisation as structured attributes; format 4 keeps any
// optimizer's state tensors by name under /optimizer/NAME/ and its name and update count as
// attributes, where format 3 kept SGD's momentum under /momentum. Both are read.
constexpr int64_t kFormat = 4;
constexpr int64_t kOldestFormat = 3;

// Where a state tensor's group is: /optimizer/NAME, or format 3's /momentum.
std::string state_group(const std::string& name, int64_t format) {
  return format >= 4 ? "optimizer/" + name : name;
}

// The checkpoint's groups and, for each, what its tensors are called in errors and the tensor
// of a parameter or buffer.
struct Section {
  std::string group;
  std::string noun;
  const std::vector<ParamInfo>* infos;
  Tensor flat;
};

// The parameters, the buffers and, when `state` is given, the optimizer's state tensors.
std::vector<Section> sections(const ParameterSet& params, const std::vector<OptimizerState>* state,
                              int64_t format) {
  ParameterSet& p = const_cast<ParameterSet&>(params);
  std::vector<Section> all = {{"params", "parameter", &params.param_infos(), p.flat_params()},
                              {"buffers", "buffer", &params.buffer_infos(), p.flat_buffers()}};
  if (state)
    for (const OptimizerState& s : *state)
      all.push_back(
          {state_group(s.name, format), s.name + " of parameter", &params.param_infos(), s.flat});
  return all;
}

// The meta's numbers, as core/hdf5_attributes writes and reads them, named in errors.
template <class T>
void write_number(hid_t object, const char* name, T value) {
  write_number_attribute(object, name, value, str_cat("checkpoint: attribute ", name, ": "));
}

void write_text(hid_t object, const char* name, const std::string& value) {
  write_text_attribute(object, name, value, str_cat("checkpoint: attribute ", name, ": "));
}

template <class T>
T read_number(hid_t object, const std::string& where, const char* name) {
  return read_number_attribute<T>(object, name,
                                  str_cat("checkpoint: ", where, ": attribute ", name, ": "));
}

int64_t read_int(hid_t file, const std::string& path, const char* name) {
  return read_number<int64_t>(file, path, name);
}

std::vector<std::string> read_texts(hid_t file, const std::string& path, const char* name) {
  return read_texts_attribute(file, name,
                              str_cat("checkpoint: ", path, ": attribute ", name, ": "));
}

std::string read_text(hid_t file, const std::string& path, const char* name) {
  const std::vector<std::string> texts = read_texts(file, path, name);
  RT_CHECK(texts.size() == 1, "checkpoint: ", path, ": attribute ", name, " holds ", texts.size(),
           " texts, expected one");
  return texts[0];
}

std::vector<float> read_floats(hid_t file, const std::string& path, const char* name) {
  const std::vector<double> values =
      read_numbers_attribute(file, name, str_cat("checkpoint: ", path, ": attribute ", name, ": "));
  return {values.begin(), values.end()};
}

std::string join_numbers(const std::vector<float>& values) {
  std::string all;
  for (size_t i = 0; i < values.size(); ++i) all += fmt::format("{}{}", i ? " " : "", values[i]);
  return all;
}

std::string serialise(const ResNetConfig& c) {
  return str_cat(c.depth, " ", to_string(c.stem), " ", fmt::format("{}", c.width), " ", c.classes,
                 " ", c.in_channels, " ", c.zero_init_residual);
}

// Every field of format 3, one per line.
std::string serialise(const CheckpointMeta& m) {
  return str_cat(m.step, "\n", m.epoch, "\n", m.samples_in_epoch, "\n", m.seed, "\n",
                 m.batch_per_rank, "\n", m.world_size, "\n", m.accum_steps, "\n", m.sample_order,
                 "\n", m.loss_scale, "\n", m.loss_scale_clean_steps, "\n", m.model, "\n", m.data,
                 "\n", m.data_fingerprint, "\n", m.config, "\n", m.version, "\n",
                 serialise(m.model_config), "\n", m.image_height, "x", m.image_width, "\n",
                 join(m.class_names, "\n"), "\n", join_numbers(m.norm.mean), "\n",
                 join_numbers(m.norm.std));
}

// What `meta_xxh64` covers: every field, one per line (format 4 adds the optimizer's two).
// Note: the effective configuration joined the meta after format 3 was fixed; it is an
// optional attribute and enters the checksum only when present, so the checkpoints written
// before it still verify, and removing it from a newer one breaks its checksum.
std::string checksummed_text(const CheckpointMeta& m, int64_t format) {
  std::string fields = serialise(m);
  if (format >= 4) fields += str_cat("\n", m.optimizer, "\n", m.optimizer_steps);
  return m.effective_config.empty() ? fields : fields + "\n" + m.effective_config;
}

void write_model(hid_t file, const CheckpointMeta& m) {
  const ResNetConfig& c = m.model_config;
  write_number(file, "model_depth", int64_t{c.depth});
  write_text(file, "model_stem", to_string(c.stem));
  write_number(file, "model_width", c.width);
  write_number(file, "model_classes", int64_t{c.classes});
  write_number(file, "model_in_channels", int64_t{c.in_channels});
  write_number(file, "model_zero_init_residual", int64_t{c.zero_init_residual});
  write_number(file, "image_height", int64_t{m.image_height});
  write_number(file, "image_width", int64_t{m.image_width});
  const std::string what = "checkpoint: attribute ";
  write_texts_attribute(file, "class_names", m.class_names, what + "class_names: ");
  write_numbers_attribute(file, "norm_mean", {m.norm.mean.begin(), m.norm.mean.end()},
                          what + "norm_mean: ");
  write_numbers_attribute(file, "norm_std", {m.norm.std.begin(), m.norm.std.end()},
                          what + "norm_std: ");
}

void read_model(hid_t f, const std::string& path, CheckpointMeta& m) {
  ResNetConfig& c = m.model_config;
  c.depth = static_cast<int>(read_int(f, path, "model_depth"));
  c.stem = parse<Stem>("checkpoint attribute model_stem", read_text(f, path, "model_stem"));
  c.width = read_number<double>(f, path, "model_width");
  c.classes = static_cast<int>(read_int(f, path, "model_classes"));
  c.in_channels = static_cast<int>(read_int(f, path, "model_in_channels"));
  c.zero_init_residual = read_int(f, path, "model_zero_init_residual") != 0;
  m.image_height = static_cast<int>(read_int(f, path, "image_height"));
  m.image_width = static_cast<int>(read_int(f, path, "image_width"));
  m.class_names =
      read_text_list(f, "class_names", str_cat("checkpoint: ", path, ": class_names: "));
  m.norm.mean = read_floats(f, path, "norm_mean");
  m.norm.std = read_floats(f, path, "norm_std");
}

void write_meta(hid_t file, const CheckpointMeta& m) {
  write_number(file, "format", kFormat);
  write_number(file, "step", m.step);
  write_number(file, "epoch", m.epoch);
  write_number(file, "samples_in_epoch", m.samples_in_epoch);
  write_number(file, "seed", m.seed);
  write_number(file, "batch_per_rank", m.batch_per_rank);
  write_number(file, "world_size", int64_t{m.world_size});
  write_number(file, "accum_steps", int64_t{m.accum_steps});
  write_text(file, "sample_order", m.sample_order);
  write_number(file, "loss_scale", m.loss_scale);
  write_number(file, "loss_scale_clean_steps", int64_t{m.loss_scale_clean_steps});
  write_text(file, "model", m.model);
  write_text(file, "data", m.data);
  write_text(file, "data_fingerprint", m.data_fingerprint);
  write_text(file, "config", m.config);
  if (!m.effective_config.empty()) write_text(file, "effective_config", m.effective_config);
  write_text(file, "version", m.version);
  write_text(file, "optimizer", m.optimizer);
  write_number(file, "optimizer_steps", m.optimizer_steps);
  write_model(file, m);
  const std::string all = checksummed_text(m, kFormat);
  write_number(file, "meta_xxh64", xxh64(all.data(), all.size()));
}

int64_t read_format(hid_t f, const std::string& path) {
  const int64_t format = H5Aexists(f, "format") > 0 ? read_int(f, path, "format") : 1;
  RT_CHECK(format >= kOldestFormat && format <= kFormat, "checkpoint: ", path, " has format ",
           format, ", this ringtrain reads formats ", kOldestFormat, " to ", kFormat,
           " (checkpoints with checksums): start a new run or use the ringtrain that wrote it");
  return format;
}

// Format 4's optimizer attributes; a format 3 checkpoint is SGD's, with one update per step.
void read_optimizer(hid_t f, const std::string& path, int64_t format, CheckpointMeta& m) {
  if (format < 4) {
    m.optimizer = "sgd";
    m.optimizer_steps = m.step;
    return;
  }
  m.optimizer = read_text(f, path, "optimizer");
  m.optimizer_steps = read_int(f, path, "optimizer_steps");
}

CheckpointMeta read_meta(hid_t f, const std::string& path) {
  const int64_t format = read_format(f, path);
  CheckpointMeta m;
  m.step = read_int(f, path, "step");
  m.epoch = read_int(f, path, "epoch");
  m.samples_in_epoch = read_int(f, path, "samples_in_epoch");
  m.seed = read_number<uint64_t>(f, path, "seed");
  m.batch_per_rank = read_int(f, path, "batch_per_rank");
  m.world_size = static_cast<int>(read_int(f, path, "world_size"));
  m.accum_steps = static_cast<int>(read_int(f, path, "accum_steps"));
  m.sample_order = read_text(f, path, "sample_order");
  m.loss_scale = read_number<double>(f, path, "loss_scale");
  m.loss_scale_clean_steps = static_cast<int>(read_int(f, path, "loss_scale_clean_steps"));
  m.model = read_text(f, path, "model");
  m.data = read_text(f, path, "data");
  m.data_fingerprint = read_text(f, path, "data_fingerprint");
  m.config = read_text(f, path, "config");
  const htri_t has_effective_config = H5Aexists(f, "effective_config");
  hdf5_check(has_effective_config, str_cat("checkpoint: ", path, ": H5Aexists effective_config"));
  if (has_effective_config > 0) m.effective_config = read_text(f, path, "effective_config");
  m.version = read_text(f, path, "version");
  read_model(f, path, m);
  read_optimizer(f, path, format, m);
  const std::string all = checksummed_text(m, format);
  RT_CHECK_AS(
      CorruptCheckpoint,
      read_number<uint64_t>(f, path, "meta_xxh64") == xxh64(all.data(), all.size()),
      "checkpoint: ", path,
      ": the meta attributes do not match their checksum meta_xxh64: ", "the file is corrupt");
  return m;
}

void write_tensor(hid_t group, const std::string& name, const Tensor& host) {
  const std::string what = str_cat("checkpoint: dataset ", name);
  std::vector<hsize_t> dims(host.shape().begin(), host.shape().end());
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  hdf5_check(space.get(), what + ": H5Screate_simple");
  Handle ds(H5Dcreate2(group, name.c_str(), H5T_NATIVE_FLOAT, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                       H5P_DEFAULT),
            H5Dclose);
  hdf5_check(ds.get(), what + ": H5Dcreate2");
  hdf5_check(H5Dwrite(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, host.raw()),
             what + ": H5Dwrite");
  // Note: HDF5 reads back a flipped bit or a zeroed block without complaint (its checksum filter
  // needs chunked datasets), so every tensor carries the XXH64 of its bytes and the meta its
  // own: a checkpoint is used only when all match, and --resume auto skips one that does not.
  write_number(ds.get(), "xxh64", xxh64(host.raw(), host.nbytes()));
  ds.close(what + ": H5Dclose");
}

// Reads dataset `name` into `values` and checks it against its checksum.
void read_verified(hid_t file, const std::string& path, const std::string& name,
                   std::vector<float>& values) {
  Handle ds(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  RT_CHECK(ds.ok(), "checkpoint: ", path, ": dataset ", name, " missing");
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  hdf5_check(space.get(), str_cat("checkpoint: ", path, ": dataset ", name, ": H5Dget_space"));
  const int64_t n = H5Sget_simple_extent_npoints(space.get());
  RT_CHECK(n >= 0, "checkpoint: ", path, ": dataset ", name,
           ": H5Sget_simple_extent_npoints: ", hdf5_error_text());
  values.resize(static_cast<size_t>(n));
  RT_CHECK_AS(
      CorruptCheckpoint,
      H5Dread(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0,
      "checkpoint: ", path, ": dataset ", name, " unreadable (truncated?)");
  const auto stored = read_number<uint64_t>(ds.get(), path + ": dataset " + name, "xxh64");
  const uint64_t computed = xxh64(values.data(), values.size() * sizeof(float));
  RT_CHECK_AS(CorruptCheckpoint, stored == computed, "checkpoint: ", path, ": dataset ", name,
              " does not match its checksum (xxh64 stored ", hex64(stored), ", computed ",
              hex64(computed), "): the file is corrupt");
}

Handle open_checkpoint(const std::string& path) {
  silence_hdf5();
  check_input_file(path, "checkpoint:", "a checkpoint");
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  RT_CHECK_AS(CorruptCheckpoint, file.ok(), "checkpoint: ", path,
              ": not an HDF5 file, or torn or truncated");
  RT_CHECK(H5Lexists(file.get(), "params", H5P_DEFAULT) > 0 ||
               H5Lexists(file.get(), "train", H5P_DEFAULT) <= 0,
           "checkpoint: ", path, ": is a dataset file (it has /train, not /params), not a ",
           "checkpoint: name a checkpoint (ckpt-stepNNNNNNNN.h5 in a --checkpoint-dir)");
  return file;
}

herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* names) {
  static_cast<std::vector<std::string>*>(names)->push_back(name);
  return 0;
}

// The datasets of one of a checkpoint's groups, by name.
std::vector<std::string> group_names(hid_t file, const std::string& path,
                                     const std::string& group) {
  std::vector<std::string> names;
  Handle g(H5Gopen2(file, group.c_str(), H5P_DEFAULT), H5Gclose);
  hdf5_check(g.get(), str_cat("checkpoint: ", path, ": group /", group));
  hdf5_check(H5Literate(g.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_name, &names),
             str_cat("checkpoint: ", path, ": listing /", group));
  return names;
}

// The datasets of a checkpoint's groups, as /GROUP/NAME.
std::vector<std::string> dataset_names(hid_t file, const std::string& path) {
  std::vector<std::string> groups = {"params", "buffers"};
  if (read_format(file, path) < 4) {
    groups.push_back("momentum");
  } else {
    for (const std::string& name : group_names(file, path, "optimizer"))
      groups.push_back("optimizer/" + name);
  }
  std::vector<std::string> all;
  for (const std::string& group : groups)
    for (const std::string& name : group_names(file, path, group))
      all.push_back(str_cat("/", group, "/", name));
  return all;
}

// The shape of dataset `name` (/GROUP/NAME); throws unless its values are 32-bit floats.
Shape stored_shape(hid_t file, const std::string& path, const std::string& name) {
  const std::string what = str_cat("checkpoint ", path, ": dataset ", name);
  Handle ds(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  hdf5_check(ds.get(), what + ": H5Dopen2");
  Handle type(H5Dget_type(ds.get()), H5Tclose);
  hdf5_check(type.get(), what + ": H5Dget_type");
  const H5T_class_t kind = H5Tget_class(type.get());
  const size_t bytes = H5Tget_size(type.get());
  RT_CHECK(kind == H5T_FLOAT && bytes == sizeof(float), what, " holds ",
           kind == H5T_FLOAT     ? str_cat(8 * bytes, "-bit floats")
           : kind == H5T_INTEGER ? str_cat(8 * bytes, "-bit integers")
                                 : std::string("values that are not numbers"),
           ", where ringtrain writes 32-bit floats: the file was not written by ringtrain, start ",
           "fresh without --resume");
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  hdf5_check(space.get(), what + ": H5Dget_space");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  hdf5_check(rank, what + ": H5Sget_simple_extent_ndims");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  hdf5_check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr),
             what + ": H5Sget_simple_extent_dims");
  return Shape(dims.begin(), dims.end());
}

// The first tensor of a section whose shape in the checkpoint (holding datasets `names`)
// differs from the model's, in the model's order and then the checkpoint's extra ones, as
// "NOUN NAME is SHAPE in the checkpoint, SHAPE in this model"; "" when they all fit.
std::string first_misfit(hid_t file, const std::string& path, const Section& s,
                         const std::vector<std::string>& names) {
  std::set<std::string> extra(names.begin(), names.end());
  for (const ParamInfo& info : *s.infos) {
    const std::string what = str_cat(s.noun, " ", info.name);
    const std::string model = str_cat(shape_str(info.shape), " in this model");
    if (extra.erase(info.name) == 0) return str_cat(what, " is not in the checkpoint, ", model);
    const Shape saved = stored_shape(file, path, str_cat("/", s.group, "/", info.name));
    if (saved != info.shape)
      return str_cat(what, " is ", shape_str(saved), " in the checkpoint, ", model);
  }
  if (extra.empty()) return "";
  const std::string& name = *extra.begin();
  return str_cat(s.noun, " ", name, " is ",
                 shape_str(stored_shape(file, path, str_cat("/", s.group, "/", name))),
                 " in the checkpoint, not in this model");
}

// Throws, naming the first tensor that does not fit, both its shapes and the model the
// checkpoint holds, unless the checkpoint holds the model's tensors with the model's shapes.
void check_fits(hid_t file, const std::string& path, const std::vector<Section>& sections) {
  for (const Section& s : sections) {
    const std::vector<std::string> names = group_names(file, path, s.group);
    const std::string misfit = first_misfit(file, path, s, names);
    if (misfit.empty()) continue;
    throw Error(str_cat("checkpoint ", path, " does not fit this model: ", misfit,
                        " (the checkpoint's /", s.group, " holds ", names.size(),
                        " tensors, this model has ", s.infos->size(),
                        "); the checkpoint was written by a run of ", read_meta(file, path).model,
                        ": run with the same --depth, --width and --stem, on data with as many ",
                        "channels and classes, or start fresh without --resume"));
  }
}

// One tensor of a section, copied to the host in f32.
Tensor host_copy(Backend& backend, const Section& s, const ParamInfo& info) {
  Tensor host = Tensor::zeros(info.shape, DType::f32);
  backend.copy(s.flat.slice(info.offset, info.shape), host);
  return host;
}

// Why a checkpoint's optimizer cannot be continued by this ringtrain, or "": an optimizer it
// does not have (an empty name too), or more updates than steps (or fewer than none).
std::string optimizer_problem(const CheckpointMeta& m) {
  const NameTable<OptimizerKind>& known = names_of<OptimizerKind>();
  if (std::none_of(known.begin(), known.end(),
                   [&](const auto& k) { return k.first == m.optimizer; }))
    return str_cat("it holds the state of optimizer '", m.optimizer,
                   "', which this ringtrain does not have");
  if (m.optimizer_steps < 0 || m.optimizer_steps > m.step)
    return str_cat("it counts ", m.optimizer_steps, " optimizer updates in ", m.step,
                   " steps (at most one per step)");
  return "";
}

// Why a checkpoint's optimizer state cannot continue its optimizer (optimizer_problem first), or
// "": every state tensor that optimizer keeps is there, with one dataset per parameter of the
// parameter's name and shape, and no other state.
std::string state_problem(hid_t file, const std::string& path, const CheckpointMeta& m) {
  const int64_t format = read_format(file, path);
  const std::vector<std::string>& kept =
      state_names(parse<OptimizerKind>("optimizer", m.optimizer));
  if (format >= 4) {
    std::vector<std::string> expected = kept;
    std::sort(expected.begin(), expected.end());
    const std::vector<std::string> stored = group_names(file, path, "optimizer");
    if (stored != expected)
      return str_cat("its /optimizer holds {", join(stored, ", "), "} where ", m.optimizer,
                     " keeps {", join(expected, ", "), "}");
  }
  const std::vector<std::string> params = group_names(file, path, "params");
  for (const std::string& name : kept) {
    const std::string group = state_group(name, format);
    if (group_names(file, path, group) != params)
      return str_cat("its /", group, " does not hold one tensor per parameter");
    for (const std::string& p : params) {
      const Shape shape = stored_shape(file, path, str_cat("/", group, "/", p));
      const Shape param = stored_shape(file, path, str_cat("/params/", p));
      if (shape != param)
        return str_cat("its /", group, "/", p, " is ", shape_str(shape), ", the parameter ",
                       shape_str(param));
    }
  }
  return "";
}

void create_group(hid_t file, const char* name) {
  Handle group(H5Gcreate2(file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  hdf5_check(group.get(), str_cat("checkpoint: H5Gcreate2 of /", name));
  group.close(str_cat("checkpoint: H5Gclose of /", name));
}

// A checkpoint holds one optimizer's state: another's cannot continue it.
void check_optimizer(const std::string& path, const CheckpointMeta& meta,
                     const Optimizer& optimizer) {
  const std::string& running = to_string(optimizer.kind());
  RT_CHECK_AS(ConfigError, meta.optimizer == running, "checkpoint ", path,
              " holds the state of --optimizer ", meta.optimizer,
              ", and this run trains with --optimizer ", running, ": resume with ", "--optimizer ",
              meta.optimizer, ", or start a new run from its weights with ", "--init-from ", path);
}

}  // namespace

void write_checkpoint(const std::string& path, Backend& backend, const ParameterSet& params,
                      const std::vector<OptimizerState>& state, const CheckpointMeta& meta,
                      const WriteProgress& progress) {
  // Note: the file is built in memory, then written to PATH.tmp, fsynced and renamed: a crash or
  // a full disk leaves the older checkpoints and at most a .tmp (removed at the next start),
  // never a torn file under a checkpoint's name that --resume auto would have to tell apart.
  write_hdf5_atomically(
      path,
      [&](hid_t file) {
        create_group(file, "optimizer");
        for (const Section& s : sections(params, &state, kFormat)) {
          Handle group(H5Gcreate2(file, s.group.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                       H5Gclose);
          hdf5_check(group.get(), str_cat("checkpoint: H5Gcreate2 of /", s.group));
          for (const ParamInfo& info : *s.infos)
            write_tensor(group.get(), info.name, host_copy(backend, s, info));
          group.close(str_cat("checkpoint: H5Gclose of /", s.group));
        }
        write_meta(file, meta);
      },
      progress, OutputKinds::files);
}

CheckpointMeta read_checkpoint_meta(const std::string& path) {
  Handle file = open_checkpoint(path);
  return read_meta(file.get(), path);
}

CheckpointMeta verify_checkpoint(const std::string& path, int64_t* datasets) {
  Handle file = open_checkpoint(path);
  CheckpointMeta meta = read_meta(file.get(), path);
  std::vector<float> values;
  std::string problem;
  const std::vector<std::string> names = dataset_names(file.get(), path);
  for (const std::string& name : names) {
    read_verified(file.get(), path, name, values);
    if (problem.empty()) problem = loaded_values_problem(name, values.data(), values.size());
  }
  if (datasets) *datasets = static_cast<int64_t>(names.size());
  if (problem.empty()) problem = optimizer_problem(meta);
  if (problem.empty()) problem = state_problem(file.get(), path, meta);
  RT_CHECK_AS(UnloadableCheckpoint, problem.empty(), "checkpoint: ", path,
              ": every checksum matches, but no run can resume from it: ", problem,
              "; resume from an earlier checkpoint of the run (--resume auto takes the newest ",
              "one that loads)");
  return meta;
}

std::string unloadable_state(Backend& backend, const ParameterSet& params,
                             const std::vector<OptimizerState>& state) {
  for (const Section& s : sections(params, &state, kFormat))
    for (const ParamInfo& info : *s.infos) {
      const Tensor host = host_copy(backend, s, info);
      const std::string problem =
          loaded_values_problem(str_cat("/", s.group, "/", info.name),
                                static_cast<const float*>(host.raw()), host.numel());
      if (!problem.empty()) return problem;
    }
  return "";
}

void load_checkpoint(const std::string& path, Backend& backend, ParameterSet& params,
                     Optimizer* optimizer) {
  Handle file = open_checkpoint(path);
  const CheckpointMeta meta = read_meta(file.get(), path);
  if (optimizer) {
    const std::string problem = optimizer_problem(meta);
    RT_CHECK_AS(UnloadableCheckpoint, problem.empty(), "checkpoint ", path, ": ", problem,
                ": the file is corrupt; resume from an earlier checkpoint of the run");
    check_optimizer(path, meta, *optimizer);
  }
  const std::vector<Section> all =
      sections(params, optimizer ? &optimizer->state() : nullptr, read_format(file.get(), path));
  check_fits(file.get(), path, all);
  std::vector<float> values;
  for (const Section& s : all) {
    for (const ParamInfo& info : *s.infos) {
      const std::string name = str_cat("/", s.group, "/", info.name);
      read_verified(file.get(), path, name, values);
      check_loaded_values("checkpoint: " + path, name, values.data(), values.size());
      Tensor host = Tensor::zeros(info.shape, DType::f32);
      std::copy(values.begin(), values.end(), static_cast<float*>(host.raw()));
      Tensor dst = s.flat.slice(info.offset, info.shape);
      backend.copy(host, dst);
    }
  }
  params.refresh_weights(backend);
  if (optimizer) optimizer->set_steps(meta.optimizer_steps);
}

bool is_checkpoint(const std::string& path) {
  silence_hdf5();
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;  // never opens a FIFO
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  return file.ok() && H5Lexists(file.get(), "params", H5P_DEFAULT) > 0;
}

std::string inspect_checkpoint(const std::string& path) {
  int64_t datasets = 0;
  const CheckpointMeta m = verify_checkpoint(path, &datasets);
  const int64_t format = read_format(open_checkpoint(path).get(), path);
  const std::string effective =
      m.effective_config.empty()
          ? "no effective configuration (written before checkpoints kept one)"
          : str_cat("effective configuration: ringtrain inspect ", path, " --print-config");
  return str_cat("checkpoint ", path, " (ringtrain ", m.version, ", format ", format, ")\n",
                 "  step ", m.step, ", epoch ", m.epoch + 1, " (", m.samples_in_epoch,
                 " samples of it consumed)\n", "  global batch ", m.global_batch(), ": ",
                 m.batch_per_rank, " per rank x ", m.world_size, " ranks x ", m.accum_steps,
                 " micro-batches; seed ", m.seed, "; sample order: ", m.sample_order, "\n",
                 "  model: ", m.model, "\n", "  input: ", m.image_height, "x", m.image_width,
                 " images, normalised by mean ", join_numbers(m.norm.mean), " and std ",
                 join_numbers(m.norm.std), "\n", "  classes: ", join(m.class_names, ", "), "\n",
                 "  data: ", m.data, ", fingerprint ", m.data_fingerprint, "\n", "  loss scale ",
                 m.loss_scale, " (", m.loss_scale_clean_steps, " clean steps)\n", "  optimizer ",
                 m.optimizer, ", ", m.optimizer_steps, " updates done\n", "  config: ", m.config,
                 "\n  ", effective, "\n  ", datasets,
                 " datasets, every one matching its xxh64 checksum\n");
}

}  // namespace ringtrain
