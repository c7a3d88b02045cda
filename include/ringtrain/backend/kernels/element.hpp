#pragma once
// How a kernel body reads and writes its element type T: through f32. Element<T> converts with
// a cast; the CUDA backend specialises it for the device's bf16 and f16 (round to nearest
// even), the grid emulator of the unit tests for its host 16-bit types.
#include "ringtrain/backend/kernels/host_device.hpp"

namespace ringtrain::kernels {

template <class T>
struct Element {
  RT_HOST_DEVICE static float load(T v) { return static_cast<float>(v); }
  RT_HOST_DEVICE static T store(float v) { return static_cast<T>(v); }
};

template <class T>
RT_HOST_DEVICE inline float to_float(T v) {
  return Element<T>::load(v);
}

template <class T>
RT_HOST_DEVICE inline T from_float(float v) {
  return Element<T>::store(v);
}

}  // namespace ringtrain::kernels
