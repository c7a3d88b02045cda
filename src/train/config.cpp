#include "ringtrain/train/config.hpp"

#include "ringtrain/prof/step_profiler.hpp"

namespace ringtrain {

void TrainConfig::validate() const {
  RT_CHECK(batch_size > 0, "config: --batch-size must be positive, got ", batch_size);
  RT_CHECK(eval_batch_size > 0, "config: eval batch size must be positive, got ", eval_batch_size);
  RT_CHECK(epochs > 0 || steps > 0, "config: need --epochs or --steps > 0");
  RT_CHECK(steps >= 0, "config: --steps must be >= 0, got ", steps);
  RT_CHECK(lr > 0, "config: --lr must be positive, got ", lr);
  RT_CHECK(label_smoothing >= 0 && label_smoothing < 1,
           "config: --label-smoothing must be in [0, 1), got ", label_smoothing);
  RT_CHECK(workers >= -1, "config: --workers must be >= 0 or auto, got ", workers);
  RT_CHECK(prefetch_factor > 0, "config: --prefetch-factor must be positive, got ",
           prefetch_factor);
  RT_CHECK(bucket_cap_mb > 0, "config: --bucket-cap-mb must be positive, got ", bucket_cap_mb);
  RT_CHECK(comm_timeout_s > 0, "config: --comm-timeout must be positive, got ", comm_timeout_s);
  RT_CHECK(memory_budget_mb > 0, "config: --memory-budget-mb must be positive, got ",
           memory_budget_mb);
  RT_CHECK(mode == "ddp" || mode == "dp", "config: --mode must be ddp or dp, got ", mode);
  RT_CHECK(devices > 0, "config: --devices must be positive, got ", devices);
  RT_CHECK(mode != "dp" || batch_size % devices == 0, "config: --mode dp splits the batch of ",
           batch_size, " evenly over ", devices, " devices: it does not divide");
  RT_CHECK(!(sync_bn && mode == "dp"),
           "config: --sync-bn is for DDP; --mode dp keeps "
           "per-device statistics as torch.nn.DataParallel does");
  RT_CHECK(accum_steps > 0, "config: --accum-steps must be positive, got ", accum_steps);
  RT_CHECK(device == "cpu" || device == "cuda", "config: --device must be cpu or cuda, got ",
           device);
  RT_CHECK(amp == "bf16" || amp == "fp16" || amp == "off",
           "config: --amp must be bf16, fp16 or off, got ", amp);
  RT_CHECK(augment_on == "host" || augment_on == "device",
           "config: --augment-on must be host or device, got ", augment_on);
  RT_CHECK(!(device == "cuda" && mode == "dp"),
           "config: --mode dp runs on CPU replicas only so far; use --device cpu");
  parse_profile_mode(profile);
  RT_CHECK(checkpoint_every >= 0, "config: --checkpoint-every must be >= 0, got ",
           checkpoint_every);
  RT_CHECK(checkpoint_minutes >= 0, "config: --checkpoint-minutes must be >= 0, got ",
           checkpoint_minutes);
  RT_CHECK(keep_checkpoints > 0, "config: --keep must be positive, got ", keep_checkpoints);
  RT_CHECK(peak_tflops >= 0, "config: --peak-tflops must be >= 0, got ", peak_tflops);
  RT_CHECK(threads >= 0, "config: --threads must be >= 0, got ", threads);
  resnet_layout(model.depth);
}

void apply_cpu_quick_config(TrainConfig& c) {
  c.model.depth = 18;
  c.model.width = 0.25;
  c.batch_size = 64;
  c.epochs = 2;
  c.steps = 0;
  c.lr = 0.05;
}

std::string describe(const TrainConfig& c) {
  return str_cat("resnet", c.model.depth, " stem ", c.model.stem, " width ", c.model.width,
                 ", batch ", c.batch_size, ", ",
                 c.steps > 0 ? str_cat(c.steps, " steps") : str_cat(c.epochs, " epochs"), ", lr ",
                 c.lr, " ", c.schedule);
}

}  // namespace ringtrain
