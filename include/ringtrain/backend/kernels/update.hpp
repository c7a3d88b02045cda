#pragma once
// What every optimizer's update body shares: the runs of the flat parameter buffer, the tensors
// an update reads and writes, and the per-run sums of squares that layer-wise rules (LARS) scale
// by. An update body is a struct with the rule's hyper-parameters `h`, the tensors `t`,
// `at_run(run)`, which gives what is constant over a run (its decay, LARS's scaled learning
// rate), and `operator()(i, at_run(run))`, which updates element i of that run. The CPU backend
// calls at_run once per run and the body for each of the run's elements; the CUDA backend and
// the unit tests' grid emulator call it through RunIndexed, which finds each element's run.
#include <math.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "ringtrain/backend/kernels/element.hpp"

namespace ringtrain {

// A contiguous range of the flat parameter buffer and whether weight decay (and, for LARS, the
// trust ratio) applies to it.
struct DecayRun {
  int64_t offset = 0;
  int64_t size = 0;
  bool decay = true;
};

}  // namespace ringtrain

namespace ringtrain::kernels {

// The most state tensors (per parameter element) an update rule keeps.
constexpr int kMaxUpdateState = 2;

// The buffers of one update, all of the flat parameter buffer's length but run_values: master
// weights w and the rule's state in W (f32; f64 in the CPU's finite-difference checks),
// gradients in G. run_values holds what the optimizer computed per run before the update
// (LARS: each run's sum of squares of w, then of g), or is null.
template <class W, class G>
struct UpdateTensors {
  const DecayRun* runs;
  int run_count;
  W* w;
  const G* g;
  W* state[kMaxUpdateState];
  const float* run_values;
};

// The gradient element in W: exact when G is W, widened through f32 from a 16-bit type.
template <class W, class G>
RT_HOST_DEVICE inline W load_grad(G v) {
  if constexpr (std::is_same_v<W, G>) {
    return v;
  } else {
    return static_cast<W>(to_float(v));
  }
}

RT_HOST_DEVICE inline float square_root(float v) {
  return sqrtf(v);
}
RT_HOST_DEVICE inline double square_root(double v) {
  return sqrt(v);
}

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

// An update body called once per index, as grid-stride launches call: each element finds its run
// by binary search, so an update is one launch however many runs.
template <class Body>
struct RunIndexed {
  Body body;
  RT_HOST_DEVICE void operator()(int64_t i) const {
    body(i, body.at_run(find_run(body.t.runs, body.t.run_count, i)));
  }
};

// A piece of one run: the runs are cut into pieces of at most kPieceSize elements, in order, so
// that a sum over a run is a fixed tree (pieces in parallel, then each run's pieces in order)
// whatever the launch geometry: the same bits on every run and every device.
struct RunPiece {
  int64_t offset = 0;
  int64_t size = 0;
};
constexpr int64_t kPieceSize = 2048;

// The pieces of every run, run by run; first_piece[r] is the index of run r's first piece and
// first_piece[runs.size()] the piece count.
inline std::vector<RunPiece> run_pieces(const std::vector<DecayRun>& runs,
                                        std::vector<int>& first_piece) {
  std::vector<RunPiece> pieces;
  first_piece.clear();
  for (const DecayRun& run : runs) {
    first_piece.push_back(static_cast<int>(pieces.size()));
    for (int64_t at = 0; at < run.size; at += kPieceSize)
      pieces.push_back({run.offset + at, run.size - at < kPieceSize ? run.size - at : kPieceSize});
  }
  first_piece.push_back(static_cast<int>(pieces.size()));
  return pieces;
}

// partial[k] = the sum of squares of piece k of x, in f32 (one index per piece).
template <class T>
struct PieceSumSquares {
  const T* x;
  const RunPiece* pieces;
  float* partial;
  RT_HOST_DEVICE void operator()(int64_t k) const {
    float s = 0;
    for (int64_t i = pieces[k].offset; i < pieces[k].offset + pieces[k].size; ++i) {
      const float v = to_float(x[i]);
      s += v * v;
    }
    partial[k] = s;
  }
};

// out[r] = the sum of run r's partial sums, in piece order (one index per run).
struct RunTotals {
  const float* partial;
  const int* first_piece;
  float* out;
  RT_HOST_DEVICE void operator()(int64_t r) const {
    float s = 0;
    for (int k = first_piece[r]; k < first_piece[r + 1]; ++k) s += partial[k];
    out[r] = s;
  }
};

}  // namespace ringtrain::kernels
