#pragma once
// What a training run is built from, shared by train() and diagnose(): the data, the loader
// settings, the training batches, the per-rank configuration and this rank's backend.
#include <memory>
#include <string>
#include <vector>

#include "ringtrain/backend/backend.hpp"
#include "ringtrain/data/dataset.hpp"
#include "ringtrain/distributed/communicator.hpp"
#include "ringtrain/distributed/mpi_communicator.hpp"
#include "ringtrain/distributed/world.hpp"
#include "ringtrain/loader/augment.hpp"
#include "ringtrain/loader/batch_source.hpp"
#include "ringtrain/loader/device_prefetcher.hpp"
#include "ringtrain/loader/loader.hpp"
#include "ringtrain/parallel/backends.hpp"
#include "ringtrain/run_config/config.hpp"

namespace ringtrain {

// --data, or the synthetic dataset (rank 0 writes it when missing, then the first rank of each
// node that does not see it; everyone reads it after a barrier). Train images larger than the
// memory budget stay on disk, to be streamed.
Dataset load_data(const TrainConfig& c, Communicator& comm);

// --data, or the synthetic dataset's path.
std::string data_path(const TrainConfig& c);

LoaderConfig loader_config(const TrainConfig& c, bool training);

// The dtype and layout the loader writes images in: the backend's, or uint8 NHWC when they are
// augmented on the device (--augment-on device).
struct ImageFormat {
  DType dtype;
  Layout layout;
};
ImageFormat loader_format(const TrainConfig& c, const Backend& backend);

// Training batches from memory, or streamed window by window when the images stayed on disk.
struct TrainSource {
  Normalization norm;
  std::unique_ptr<ImageTransform> transform;  // on the heap: the loader keeps a reference to it
  std::unique_ptr<BatchSource> batches;
  DeviceAugment augment;      // the table on the device, with --augment-on device
  int64_t window_images = 0;  // train images left on disk: images per streaming window; else 0
};
TrainSource make_train_source(const TrainConfig& c, const Split& train, const World& world,
                              Backend& backend);

// --mode dp's replica count: --devices, or by default 2 CPU replicas or every visible GPU.
// Throws ConfigError when CUDA has fewer than --devices GPUs (--dp-share-device aside).
int dp_devices(const TrainConfig& c, int visible_gpus);

// --global-batch-size is split evenly over the ranks; --batch-size is per rank; --mode dp's
// devices are resolved (dp_devices). Validates.
TrainConfig per_rank_config(TrainConfig c, int world_size);

// --threads 0 (the default) becomes this rank's share of its node's cores (node_cpu_share: its
// affinity mask, divided among the local ranks that share it), and rank 0 says what was chosen.
// Collective over the node's ranks.
void use_cpu_share(TrainConfig& c, const World& world);

// The conv algorithm cache file of a run: --conv-algo-cache, by default conv_algos.json in the
// checkpoint folder; "" for --conv-algo-cache none.
std::string conv_algo_cache_path(const TrainConfig& c);
// What this rank trains on (make_backends makes it): its CPU share or its GPU by local rank, or
// --mode dp's replicas, one per device (all on device 0 with --dp-share-device), in the
// --amp compute dtype.
DeviceRequest device_request(const TrainConfig& c);

// The model a run trains: --depth, --width and --stem, with the input channels and the classes
// of the data.
ResNetConfig model_config(const TrainConfig& c, const Dataset& data);

// The communicators' settings: --comm-timeout, --debug-collectives, --debug-comm-delay-ms.
CommOptions comm_options(const TrainConfig& c);

// What carries gradients and SyncBatchNorm sums: NCCL on CUDA (made for them, owned here), the
// job's MPI communicator on the CPU.
class GradientCommunicator {
 public:
  GradientCommunicator(const TrainConfig& c, const World& world, Backend& backend,
                       Communicator& mpi);
  Communicator& get() { return nccl_ ? *nccl_ : mpi_; }

 private:
  std::unique_ptr<Communicator> nccl_;
  Communicator& mpi_;
};

}  // namespace ringtrain
