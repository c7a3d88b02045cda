#pragma once
// Kernel bodies of the optimiser's ops: the finite check of fp16 loss scaling and PyTorch's SGD
// step (see CpuBackend::sgd_step) over the flat parameter buffer. Each is called once per index
// by the CUDA grid-stride launcher and by the unit tests' host emulator.
#include <cfloat>
#include <cstdint>

#include "ringtrain/backend/kernels/element.hpp"
#include "ringtrain/backend/ops.hpp"

namespace ringtrain::kernels {

// Whether v is neither infinite nor NaN: NaN fails both comparisons, an infinity one of them.
// Plain comparisons, so that g++ and nvcc (host and device) compile the same test.
RT_HOST_DEVICE inline bool is_finite(float v) {
  return v >= -FLT_MAX && v <= FLT_MAX;
}

// Note: the flag starts at 1 and every index holding a NaN or an infinity stores 0 into it.
// Several threads may store at once; they all store the same value, so the race is benign and
// needs no atomic.
template <class T>
struct AllFinite {
  const T* p;
  int* all_finite;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    if (!is_finite(to_float(p[i]))) *all_finite = 0;
  }
};

// The index of the run that holds element i: the last one starting at or before i. The runs are
// sorted by offset and the first starts at 0, so one always does.
RT_HOST_DEVICE inline int find_run(const DecayRun* runs, int run_count, int64_t i) {
  int lo = 0, hi = run_count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (runs[mid].offset <= i) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// One SGD step of every run in one pass: f32 master weights w and momentum m, gradients g in the
// compute dtype G, multiplied by grad_scale first. Each element finds its run by binary search,
// so the step is one launch however many runs.
template <class G>
struct SgdStep {
  SgdHyper h;
  const DecayRun* runs;
  int run_count;
  float* w;
  const G* g;
  float* m;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    const float wd = runs[find_run(runs, run_count, i)].decay ? h.weight_decay : 0.f;
    float d = h.grad_scale * to_float(g[i]) + wd * w[i];
    if (h.momentum != 0.f) {
      m[i] = h.momentum * m[i] + d;
      d = h.nesterov ? d + h.momentum * m[i] : m[i];
    }
    w[i] -= h.lr * d;
  }
};

}  // namespace ringtrain::kernels
