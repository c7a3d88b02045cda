#include "conv_primitives.hpp"

#include <algorithm>
#include <cstdlib>
#include <dnnl.hpp>
#include <unordered_map>
#include <utility>

#include "kernels.hpp"
#include "ringtrain/core/error.hpp"
#include "signals_deferred.hpp"
#include "winograd.hpp"

namespace ringtrain::cpu {

using dnnl::algorithm;
using dnnl::memory;
using tag = memory::format_tag;

// One tensor of a primitive: the caller's plain memory and, when the primitive wants another
// layout, its own copy (in a buffer of the backend) and the reorder between the two.
struct Operand {
  int arg = 0;
  memory user, inner;
  dnnl::reorder convert;
  bool converted = false;
};

// One pass's primitive and its operands; run() points them at the caller's tensors, the shared
// layout buffers and the shared scratchpad.
struct ConvPrimitives::Entry {
  dnnl::primitive primitive;
  Operand in[2], out;
  memory scratchpad;
  std::unordered_map<int, memory> args;  // the memory objects the primitive runs on
};

namespace {

// Note: a convolution with a window larger than 1x1 lets oneDNN choose its layouts (blocked by
// 16 channels, its direct AVX-512 kernels) and reorders the operands in and out inside the op:
// the three passes of ResNet-50's 3x3 layers took about 257 ms against 362 ms for the plain
// layouts (which run oneDNN's im2col + GEMM), reorders included. 1x1 convolutions are a GEMM on
// plain layouts already and measured the same both ways (256-277 ms against 264-270 ms), so
// they skip the reorders (docs/perf/cpu.md) - except with a stride, which oneDNN's gemm
// convolution serves with an im2col: ResNet-18's 64->128 shortcut took 11 ms per forward on
// plain layouts and 1.7 ms on the blocked ones.
bool blocked_layouts(const ConvGeometry& g) {
  return g.r > 1 || g.s > 1 || g.stride > 1;
}

struct Descs {
  memory::desc src, weights, dst;              // the caller's layouts
  memory::desc src_any, weights_any, dst_any;  // what the primitive is offered
  memory::dims strides, padding;
};

Descs descs_of(const ConvGeometry& g) {
  const auto f32 = memory::data_type::f32;
  const memory::dims src{g.n, g.c, g.h, g.w}, weights{g.k, g.c, g.r, g.s},
      dst{g.n, g.k, g.p(), g.q()};
  const bool any = blocked_layouts(g);
  return {memory::desc(src, f32, tag::nchw),
          memory::desc(weights, f32, tag::oihw),
          memory::desc(dst, f32, tag::nchw),
          memory::desc(src, f32, any ? tag::any : tag::nchw),
          memory::desc(weights, f32, any ? tag::any : tag::oihw),
          memory::desc(dst, f32, any ? tag::any : tag::nchw),
          {g.stride, g.stride},
          {g.pad, g.pad}};
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// Note: convolution_direct, not convolution_auto, so that the implementation (and with it the
// order of the sums) is fixed by the geometry: auto picks oneDNN's Winograd for some 3x3 shapes on
// AVX-512 CPUs and not on others. The backward passes that suit Winograd run ours instead
// (winograd.hpp), the same on every CPU.
constexpr algorithm kAlgorithm = algorithm::convolution_direct;

dnnl::convolution_forward::primitive_desc forward_desc(const Descs& d, const dnnl::engine& eng) {
  return dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, kAlgorithm, d.src_any,
                                      d.weights_any, d.dst_any, d.strides, d.padding, d.padding),
      user_scratchpad(), eng);
}

// An input operand (user to inner) or the output (inner to user).
Operand operand(const dnnl::engine& engine, int arg, const memory::desc& user,
                const memory::desc& inner, bool input) {
  Operand o;
  o.arg = arg;
  o.user = memory(user, engine, nullptr);
  o.converted = user != inner;
  if (!o.converted) return o;
  o.inner = memory(inner, engine, nullptr);
  o.convert = input ? dnnl::reorder(o.user, o.inner) : dnnl::reorder(o.inner, o.user);
  return o;
}

}  // namespace

using Key = std::tuple<ConvPass, int, int, int, int, int, int, int, int, int>;

// What one thread's part of the batch owns: its primitives and its buffers.
struct ConvPrimitives::Part {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<Key, std::unique_ptr<Entry>> cache;
  AlignedBuffer scratchpad;  // shared by every primitive of the part, grown to the largest
  AlignedBuffer layouts[3];  // the operands in the primitive's layout: two inputs, the output
  AlignedBuffer gradient;    // the part's filter gradient
  WinogradScratch winograd;  // our Winograd's buffers

  Entry& entry(ConvPass pass, const ConvGeometry& g);
  void run(Entry& e, const void* a, const void* b, void* out);
};

ConvPrimitives::ConvPrimitives(ThreadPool& pool) : pool_(pool) {
  for (int i = 0; i <= pool.size(); ++i) parts_.push_back(std::make_unique<Part>());
}
ConvPrimitives::~ConvPrimitives() = default;

namespace {

// The primitive of pass on g, and its operands.
std::unique_ptr<ConvPrimitives::Entry> make_entry(ConvPass pass, const ConvGeometry& g,
                                                  const dnnl::engine& eng) {
  const Descs d = descs_of(g);
  auto e = std::make_unique<ConvPrimitives::Entry>();
  const dnnl::convolution_forward::primitive_desc fwd = forward_desc(d, eng);
  if (pass == ConvPass::forward) {
    e->primitive = dnnl::convolution_forward(fwd);
    e->in[0] = operand(eng, DNNL_ARG_SRC, d.src, fwd.src_desc(), true);
    e->in[1] = operand(eng, DNNL_ARG_WEIGHTS, d.weights, fwd.weights_desc(), true);
    e->out = operand(eng, DNNL_ARG_DST, d.dst, fwd.dst_desc(), false);
    e->scratchpad = memory(fwd.scratchpad_desc(), eng, nullptr);
  } else if (pass == ConvPass::backward_data) {
    const dnnl::convolution_backward_data::primitive_desc pd(
        dnnl::convolution_backward_data::desc(kAlgorithm, d.src_any, d.weights_any, d.dst_any,
                                              d.strides, d.padding, d.padding),
        user_scratchpad(), eng, fwd);
    e->primitive = dnnl::convolution_backward_data(pd);
    e->in[0] = operand(eng, DNNL_ARG_DIFF_DST, d.dst, pd.diff_dst_desc(), true);
    e->in[1] = operand(eng, DNNL_ARG_WEIGHTS, d.weights, pd.weights_desc(), true);
    e->out = operand(eng, DNNL_ARG_DIFF_SRC, d.src, pd.diff_src_desc(), false);
    e->scratchpad = memory(pd.scratchpad_desc(), eng, nullptr);
  } else {
    const dnnl::convolution_backward_weights::primitive_desc pd(
        dnnl::convolution_backward_weights::desc(kAlgorithm, d.src_any, d.weights_any, d.dst_any,
                                                 d.strides, d.padding, d.padding),
        user_scratchpad(), eng, fwd);
    e->primitive = dnnl::convolution_backward_weights(pd);
    e->in[0] = operand(eng, DNNL_ARG_SRC, d.src, pd.src_desc(), true);
    e->in[1] = operand(eng, DNNL_ARG_DIFF_DST, d.dst, pd.diff_dst_desc(), true);
    e->out = operand(eng, DNNL_ARG_DIFF_WEIGHTS, d.weights, pd.diff_weights_desc(), false);
    e->scratchpad = memory(pd.scratchpad_desc(), eng, nullptr);
  }
  for (const Operand* o : {&e->in[0], &e->in[1], &e->out})
    e->args[o->arg] = o->converted ? o->inner : o->user;
  e->args[DNNL_ARG_SCRATCHPAD] = e->scratchpad;
  return e;
}

}  // namespace

ConvPrimitives::Entry& ConvPrimitives::Part::entry(ConvPass pass, const ConvGeometry& g) {
  const Key key{pass, g.n, g.c, g.h, g.w, g.k, g.r, g.s, g.stride, g.pad};
  std::unique_ptr<Entry>& slot = cache[key];
  if (!slot) slot = make_entry(pass, g, engine);
  return *slot;
}

void ConvPrimitives::Part::run(Entry& e, const void* a, const void* b, void* out) {
  const void* inputs[2] = {a, b};
  for (int i = 0; i < 2; ++i) {
    Operand& o = e.in[i];
    o.user.set_data_handle(const_cast<void*>(inputs[i]));
    if (!o.converted) continue;
    o.inner.set_data_handle(layouts[i].reserve(o.inner.get_desc().get_size()));
    o.convert.execute(stream, o.user, o.inner);
  }
  e.out.user.set_data_handle(out);
  if (e.out.converted)
    e.out.inner.set_data_handle(layouts[2].reserve(e.out.inner.get_desc().get_size()));
  e.scratchpad.set_data_handle(scratchpad.reserve(e.scratchpad.get_desc().get_size()));
  e.primitive.execute(stream, e.args);
  if (e.out.converted) e.out.convert.execute(stream, e.out.inner, e.out.user);
  stream.wait();
}

int64_t ConvPrimitives::parts_of(const ConvGeometry& g) const {
  return std::min<int64_t>(g.n, static_cast<int64_t>(parts_.size()));
}

void ConvPrimitives::for_each_part(
    const ConvGeometry& g,
    const std::function<void(Part&, int64_t index, const ConvGeometry&, int n0)>& body) {
  const int64_t parts = parts_of(g);
  pool_.parallel_for(parts, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int n0 = static_cast<int>(g.n * i / parts),
                n1 = static_cast<int>(g.n * (i + 1) / parts);
      ConvGeometry part = g;
      part.n = n1 - n0;
      body(*parts_[static_cast<size_t>(i)], i, part, n0);
    }
  });
}

// The parts' filter gradients are added in part order, whatever order they finished in.
void ConvPrimitives::add_part_gradients(const ConvGeometry& g, float* out) {
  const int64_t parts = parts_of(g);
  const int64_t size = int64_t{g.k} * g.c * g.r * g.s;
  for (int64_t i = 0; i < parts; ++i) {
    const auto* sum = static_cast<const float*>(parts_[static_cast<size_t>(i)]->gradient.data());
    for (int64_t j = 0; j < size; ++j) out[j] += sum[j];
  }
}

// Part i of the batch runs on thread i of the pool, single-threaded inside oneDNN, with the
// asynchronous signals deferred (signals_deferred.hpp).
void ConvPrimitives::run(const char* call, ConvPass pass, const ConvGeometry& g,
                         const Operands& o) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (winograd_suits(pass, g)) return run_winograd(pass, g, o);
  const size_t filter_bytes = sizeof(float) * size_t(g.k) * g.c * g.r * g.s;
  for_each_part(g, [&](Part& p, int64_t, const ConvGeometry& part, int n0) {
    void* out = pass == ConvPass::backward_filter ? p.gradient.reserve(filter_bytes)
                                                  : o.out + n0 * o.out_image;
    try {
      single_threaded_onednn();
      with_signals_deferred(call, [&] {
        p.run(p.entry(pass, part), o.a + n0 * o.a_image, o.b + n0 * o.b_image, out);
      });
    } catch (const dnnl::error& e) {
      throw Error(str_cat(call, ": oneDNN failed on ", part.str(), ": ", e.what(), " (status ",
                          int(e.status), "); the CPU or this oneDNN build lacks a kernel for it"));
    }
  });
  if (pass == ConvPass::backward_filter) add_part_gradients(g, o.out);
}

// Our Winograd (winograd.hpp): the input gradient's transformed filters are made once, split
// over the threads by filter, then each part of the batch runs on its thread as in run(). The
// filter gradient's parts sum into their own slices of the same buffer.
void ConvPrimitives::run_winograd(ConvPass pass, const ConvGeometry& g, const Operands& o) {
  const size_t filters = winograd_filters_size(g);
  const size_t sets = pass == ConvPass::backward_data ? 1 : size_t(parts_of(g));
  auto* transformed =
      static_cast<float*>(winograd_filters_.reserve(sizeof(float) * filters * sets));
  if (pass == ConvPass::backward_data) {
    float* u = transformed;
    pool_.parallel_for(g.k, [&](int64_t k0, int64_t k1) {
      winograd_data_filters(g, o.b, u, static_cast<int>(k0), static_cast<int>(k1));
    });
    for_each_part(g, [&](Part& p, int64_t, const ConvGeometry& part, int n0) {
      winograd_backward_data(part, u, o.a + n0 * o.a_image, o.out + n0 * o.out_image, p.winograd);
    });
    return;
  }
  const size_t filter_bytes = sizeof(float) * size_t(g.k) * g.c * g.r * g.s;
  for_each_part(g, [&](Part& p, int64_t i, const ConvGeometry& part, int n0) {
    auto* dw = static_cast<float*>(p.gradient.reserve(filter_bytes));
    winograd_backward_filter(part, o.a + n0 * o.a_image, o.b + n0 * o.b_image, dw,
                             transformed + filters * size_t(i), p.winograd);
  });
  add_part_gradients(g, o.out);
}

void ConvPrimitives::forward(const ConvGeometry& g, const float* x, const float* w, float* y) {
  const int64_t in_image = int64_t{g.c} * g.h * g.w, out_image = int64_t{g.k} * g.p() * g.q();
  run("conv_forward", ConvPass::forward, g, {x, w, y, in_image, 0, out_image});
}

void ConvPrimitives::backward_data(const ConvGeometry& g, const float* dy, const float* w,
                                   float* dx) {
  const int64_t in_image = int64_t{g.c} * g.h * g.w, out_image = int64_t{g.k} * g.p() * g.q();
  run("conv_backward_data", ConvPass::backward_data, g, {dy, w, dx, out_image, 0, in_image});
}

void ConvPrimitives::backward_filter(const ConvGeometry& g, const float* x, const float* dy,
                                     float* dw) {
  const int64_t in_image = int64_t{g.c} * g.h * g.w, out_image = int64_t{g.k} * g.p() * g.q();
  run("conv_backward_filter", ConvPass::backward_filter, g, {x, dy, dw, in_image, out_image, 0});
}

}  // namespace ringtrain::cpu
