#include "ringtrain/backend/geometry.hpp"

#include "ringtrain/core/error.hpp"

namespace ringtrain {

std::string ConvGeometry::str() const {
  return str_cat("conv ", r, "x", s, " stride ", stride, " pad ", pad, " [", n, ",", c, ",", h, ",",
                 w, "] -> [", n, ",", k, ",", p(), ",", q(), "]");
}

}  // namespace ringtrain
