#include "ringtrain/checkpoint/resume_position.hpp"

namespace ringtrain {
namespace {

std::string recipe(const CheckpointMeta& m) {
  return str_cat(m.global_batch(), " (--batch-size ", m.batch_per_rank, " on ", m.world_size,
                 " ranks, --accum-steps ", m.accum_steps, ")");
}

bool whole_split(const std::string& order) {
  return order == describe_sample_order(0);
}

bool same_recipe(const CheckpointMeta& a, const CheckpointMeta& b) {
  return a.batch_per_rank == b.batch_per_rank && a.world_size == b.world_size &&
         a.accum_steps == b.accum_steps && a.sample_order == b.sample_order;
}

}  // namespace

std::string describe_sample_order(int64_t window_images) {
  if (window_images == 0) return "one permutation of the whole split per epoch";
  return str_cat("streamed in windows of ", window_images, " images, each sharded by rank");
}

std::string checkpoint_mismatch(const CheckpointMeta& saved, const CheckpointMeta& now) {
  if (saved.model != now.model)
    return str_cat("it holds another model (", saved.model, "; this run: ", now.model, ")");
  if (saved.data_fingerprint != now.data_fingerprint)
    return str_cat("it was trained on other data (", saved.data, ", content fingerprint ",
                   saved.data_fingerprint, "; this run: ", now.data, ", fingerprint ",
                   now.data_fingerprint, ")");
  if (saved.seed != now.seed)
    return str_cat("it was trained with --seed ", saved.seed, " (this run: --seed ", now.seed,
                   "), which orders every epoch's samples differently; resume with --seed ",
                   saved.seed);
  return "";
}

ResumePosition resume_position(const CheckpointMeta& saved, const CheckpointMeta& now) {
  ResumePosition p;
  const int64_t per_rank_batch = now.batch_per_rank * now.world_size, global = now.global_batch();
  if (same_recipe(saved, now) ||
      (saved.sample_order == now.sample_order && whole_split(now.sample_order) &&
       saved.samples_in_epoch % global == 0)) {
    p.samples = saved.samples_in_epoch;
    p.batch_in_epoch = saved.samples_in_epoch / per_rank_batch;
    return p;
  }
  p.exact = false;
  p.samples = saved.samples_in_epoch / global * global;
  p.batch_in_epoch = p.samples / per_rank_batch;
  const std::string advice =
      str_cat("resume with the checkpoint's recipe (global batch ", recipe(saved),
              "), or add --resume-force to continue from sample ", p.samples,
              " of the epoch (the last ", saved.samples_in_epoch - p.samples, " seen again)");
  if (saved.sample_order != now.sample_order || !whole_split(now.sample_order))
    p.problem = str_cat("the epoch's sample order changed (checkpoint: ", saved.sample_order,
                        "; this run: ", now.sample_order, ") or depends on the global batch (",
                        recipe(saved), " then, ", recipe(now), " now); ", advice);
  else
    p.problem = str_cat("the checkpoint consumed ", saved.samples_in_epoch, " samples of epoch ",
                        saved.epoch + 1, ", which is not a whole number of the new global batch ",
                        recipe(now), "; ", advice);
  return p;
}

std::string run_mismatch(const CheckpointMeta& saved, const CheckpointMeta& now) {
  const std::string mismatch = checkpoint_mismatch(saved, now);
  if (!mismatch.empty() || saved.optimizer == now.optimizer) return mismatch;
  return str_cat("it holds the state of --optimizer ", saved.optimizer, " (this run: --optimizer ",
                 now.optimizer, ")");
}

}  // namespace ringtrain
