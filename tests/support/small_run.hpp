#pragma once
// A short CUDA training run of a small ResNet on a small synthetic dataset, for the tests that
// build a whole TrainSession on the CUDA backend (the GPU tests, the launch ledger).
#include <unistd.h>

#include <filesystem>
#include <string>

#include "ringtrain/data/hdf5_io.hpp"
#include "ringtrain/data/synthetic.hpp"
#include "ringtrain/run_config/config.hpp"

namespace ringtrain::test {

// ResNet-18 width 0.25, batch 16, on 256 training and 16 test images of 16x16 written once to
// a folder of this process; the run's checkpoints in its own subfolder `name` (a folder is
// claimed by one run at a time); no progress lines and no final checkpoint. The caller sets the
// run's length and whatever its test is about.
inline TrainConfig small_cuda_run(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ringtrain_small_runs_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  TrainConfig c;
  c.data = (dir / "data.h5").string();
  if (!std::filesystem::exists(c.data)) {
    SynthConfig synth;
    synth.train_count = 256;
    synth.test_count = 16;
    synth.height = synth.width = 16;
    write_hdf5_dataset(c.data, make_synthetic(synth));
  }
  c.device = DeviceKind::cuda;
  c.model.depth = 18;
  c.model.width = 0.25;
  c.batch_size = 16;
  c.log_interval_s = 1e9;
  c.final_checkpoint = false;
  c.checkpoint_dir = (dir / name).string();
  return c;
}

}  // namespace ringtrain::test
