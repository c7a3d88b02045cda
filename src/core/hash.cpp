#include "ringtrain/core/hash.hpp"

#include <cstdio>

// Note: xxHash's header-only form (the library's own code compiled here), so the binaries do
// not depend on libxxhash.so, which the GPU machine's bundle would otherwise have to carry.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace ringtrain {

uint64_t xxh64(const void* data, size_t bytes, uint64_t seed) {
  return XXH64(data, bytes, seed);
}

std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace ringtrain
