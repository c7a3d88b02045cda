#include "ringtrain/dist/mpi_communicator.hpp"

#include "ringtrain/dist/world.hpp"

namespace ringtrain {
namespace {

MPI_Datatype mpi_type(const Tensor& t) {
  switch (t.dtype()) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::i32:
      return MPI_INT;
    case DType::u8:
      return MPI_UNSIGNED_CHAR;
    default:
      break;
  }
  throw Error(str_cat("MpiCommunicator: cannot reduce ", t.describe()));
}

template <class T>
void scale(Tensor& t, double factor) {
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(p[i] * factor);
}

void divide_by(Tensor& t, int size) {
  if (t.dtype() == DType::f32) return scale<float>(t, 1.0 / size);
  if (t.dtype() == DType::f64) return scale<double>(t, 1.0 / size);
  throw Error(str_cat("MpiCommunicator: cannot average ", t.describe()));
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm_(comm) {
  RT_MPI_CHECK(MPI_Comm_rank(comm, &rank_));
  RT_MPI_CHECK(MPI_Comm_size(comm, &size_));
}

MpiCommunicator::~MpiCommunicator() {
  for (auto& [handle, p] : pending_)
    if (!p.done) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
}

CommHandle MpiCommunicator::all_reduce_async(Tensor& buffer, int64_t offset, int64_t count,
                                             ReduceOp op) {
  RT_CHECK(buffer.device().kind == Device::Kind::cpu, "MpiCommunicator: buffer on ",
           buffer.device().str(), "; MPI all-reduces host memory");
  RT_CHECK(count <= INT32_MAX, "MpiCommunicator: range of ", count, " elements is too large");
  Pending p{MPI_REQUEST_NULL, buffer.reshaped({buffer.numel()}).slice(offset, {count}), op};
  RT_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, p.range.raw(), static_cast<int>(count),
                              mpi_type(buffer), MPI_SUM, comm_, &p.request));
  const CommHandle h = next_handle_++;
  pending_.emplace(h, std::move(p));
  return h;
}

void MpiCommunicator::progress() {
  for (auto& [handle, p] : pending_) {
    if (p.done) continue;
    int flag = 0;
    RT_MPI_CHECK(MPI_Test(&p.request, &flag, MPI_STATUS_IGNORE));
    if (flag) {
      p.done = true;
      ++completed_before_wait_;
    }
  }
}

void MpiCommunicator::wait(CommHandle handle) {
  auto it = pending_.find(handle);
  RT_CHECK(it != pending_.end(), "MpiCommunicator::wait: unknown handle ", handle);
  Pending& p = it->second;
  if (!p.done) RT_MPI_CHECK(MPI_Wait(&p.request, MPI_STATUS_IGNORE));
  if (p.op == ReduceOp::average) divide_by(p.range, size_);
  pending_.erase(it);
}

void MpiCommunicator::broadcast(Tensor& buffer, int root) {
  RT_CHECK(buffer.nbytes() <= INT32_MAX, "MpiCommunicator::broadcast: ", buffer.describe(),
           " is too large for one call");
  RT_MPI_CHECK(MPI_Bcast(buffer.raw(), static_cast<int>(buffer.nbytes()), MPI_BYTE, root, comm_));
}

void MpiCommunicator::barrier() {
  RT_MPI_CHECK(MPI_Barrier(comm_));
}

void MpiCommunicator::all_reduce_host(double* values, int count, ReduceOp op) {
  RT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, comm_));
  if (op == ReduceOp::average)
    for (int i = 0; i < count; ++i) values[i] /= size_;
}

}  // namespace ringtrain
