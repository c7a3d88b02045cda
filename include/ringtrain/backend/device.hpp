#pragma once
#include <memory>
#include <string>

#include "ringtrain/core/error.hpp"
#include "ringtrain/core/tensor.hpp"

namespace ringtrain {

// The services of one device: its identity, its memory, copies to and from the host, and its
// clock. The ops that compute on it are Ops; a Backend is both (backend.hpp).
class Device {
 public:
  virtual ~Device() = default;

  virtual DeviceId device_id() const = 0;
  virtual std::string name() const = 0;
  // The device in a user's words, for the start-up line and the summary: its name, and for the
  // CPU its threads and kernel level.
  virtual std::string description() const { return name(); }
  // The dtype activations are computed in (f32 for the CPU reference).
  virtual DType compute_dtype() const = 0;
  virtual Layout layout() const = 0;

  // Memory.
  virtual Tensor zeros(const Shape& shape, DType dtype) = 0;
  virtual void fill(Tensor& t, double value) = 0;
  // Either side may be on the host; 4-D tensors of different layouts are transposed.
  virtual void copy(const Tensor& src, Tensor& dst) = 0;
  // Writes `bytes` bytes of host memory at the start of dst (this device's memory) in stream
  // order: work issued before reads dst's old bytes, work issued after the new ones. The host
  // neither waits for the device nor keeps `host`: a step's learning rate goes to the device
  // this way without draining it.
  virtual void write(const void* host, std::size_t bytes, Tensor& dst) = 0;
  // dst = src converted to dst's dtype (f32 master weights into their compute-dtype copy).
  virtual void cast(const Tensor& src, Tensor& dst) = 0;
  // dst += src converted to dst's dtype, then src = 0: one backward pass's compute-dtype
  // gradients into the f32 ones the optimizer reads (ParameterSet::hand_over_gradients).
  virtual void accumulate(Tensor& src, Tensor& dst) = 0;
  virtual void synchronize() = 0;
  // Makes this device the calling thread's current one (cudaSetDevice on CUDA; nothing on the
  // CPU). A thread that issues work to a device other than the one it started on calls it first.
  virtual void bind_thread() = 0;

  // Timing on the device's own clock, for the profiler: mark() records a point in the work
  // issued so far (a CUDA event on the compute stream; the host clock on the CPU) and returns
  // its id, one more than the last (0 first); seconds_between() waits for the later mark and
  // gives the time between two marks; release_marks(before) says the marks before that id have
  // been read, so the device may reuse them. A profiler reads a step's marks steps later, so
  // that reading waits for work the device has long finished, never for the work just issued.
  // `label` names what starts at the mark (an NVTX range on CUDA, for Nsight Systems), nullptr
  // when nothing does.
  virtual int64_t mark(const char* label) = 0;
  virtual double seconds_between(int64_t from, int64_t to) = 0;
  virtual void release_marks(int64_t before) = 0;

  // Host memory the loader assembles batches in: page-locked on CUDA, so that copies from it
  // run asynchronously.
  virtual std::shared_ptr<void> host_buffer(std::size_t bytes) = 0;
  // Host-to-device copy on the copy stream. It starts after all work issued so far (so it never
  // overwrites a buffer still being read) and overlaps with work issued after it.
  virtual void copy_to_device_async(const Tensor& host, Tensor& device) = 0;
  // Returns when every copy issued so far has finished reading its host memory; work issued
  // afterwards is ordered after those copies.
  virtual void wait_for_copies() = 0;

  // Step capture (--cuda-graph): begin_capture() records the work issued to this device from
  // then on without running it, end_capture() keeps it (in place of the capture kept before),
  // and replay() issues the kept work again as one launch, reading whatever its device memory
  // holds by then. While capturing, no op may read a value back or wait for the device, and
  // the work must not depend on host values that change between replays (the learning rate is
  // written to the device: Device::write). drop_capture() ends a capture still open (an error
  // interrupted it) keeping nothing, and lets the kept work's memory go.
  // capture_unsupported() says why a device cannot capture, or is empty when it can.
  virtual std::string capture_unsupported() const {
    return "step capture (--cuda-graph) needs a CUDA device";
  }
  virtual void begin_capture() { throw Error(capture_unsupported()); }
  virtual void end_capture() { throw Error(capture_unsupported()); }
  virtual void replay() { throw Error(capture_unsupported()); }
  virtual void drop_capture() {}

  // How many times the host has waited for a value the device computed: a loss, a count, a
  // finite check, a copy to the host (on the CPU: a copy out of the memory CPU backends' zeros()
  // handed out into any other). A training step that prints nothing makes none (one with
  // fp16's finite check makes that one, as PyTorch's GradScaler does).
  int64_t values_read() const { return values_read_; }

 protected:
  void count_value_read() { ++values_read_; }

 private:
  int64_t values_read_ = 0;
};

}  // namespace ringtrain
