#pragma once
// XXH64 (xxHash, 64-bit, from libxxhash): the checksum of checkpoint tensors and the content
// fingerprint of datasets. Fast (several GB/s), and a flipped bit changes the value.
#include <cstddef>
#include <cstdint>
#include <string>

namespace ringtrain {

uint64_t xxh64(const void* data, size_t bytes, uint64_t seed = 0);

// The value as 16 lowercase hex digits.
std::string hex64(uint64_t value);

}  // namespace ringtrain
