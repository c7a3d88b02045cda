#pragma once
// RT_HOST_DEVICE marks a function that runs on both sides: compiled by nvcc it is
// __host__ __device__ (the CUDA kernels call it), compiled by the host compiler it is a plain
// function (the CPU code and the unit tests' grid emulator call it).

#ifdef __CUDACC__
#define RT_HOST_DEVICE __host__ __device__
#else
#define RT_HOST_DEVICE
#endif
