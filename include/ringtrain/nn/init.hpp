#pragma once
#include <random>

#include "ringtrain/backend/device.hpp"

namespace ringtrain {

// Fill a (possibly device) tensor with host-generated random values, so that initialisation
// is identical on every backend for the same seed.
void init_normal(Device& device, Tensor t, double stddev, std::mt19937_64& rng);
void init_uniform(Device& device, Tensor t, double bound, std::mt19937_64& rng);

}  // namespace ringtrain
