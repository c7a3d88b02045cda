#pragma once
#include "ringtrain/backend/device.hpp"
#include "ringtrain/backend/ops.hpp"

namespace ringtrain {

// One device and the ops that run on it: one implementation per device kind (CpuBackend, the
// CUDA backend behind make_cuda_backend).
// Note: the interface is split but implemented by one object because the CUDA ops need the
// device's streams, handles and memory cache. Callers that need only device services (the
// loader, the prefetcher's table upload, the communicators, the profiler, parameter allocation
// and initialisation) take a Device&, so the reader sees what they can touch.
class Backend : public Device, public Ops {};

}  // namespace ringtrain
