#include "core/layers/filler.hpp"

#include <cmath>

namespace taihu {

Filler Filler::from_options(const config::Section& options, const std::string& key,
                            const std::string& fallback) {
  const std::string text = options.get_or<std::string>(key, fallback);
  const auto parts = config::split_list(text);
  auto number = [&](size_t i) {
    if (i >= parts.size()) throw options.error(key, "filler '" + text + "' lacks an argument");
    auto v = config::parse_value<float>(parts[i]);
    if (!v) throw options.error(key, "filler argument '" + std::string(parts[i]) + "' is not a number");
    return *v;
  };
  Filler f;
  const std::string_view kind = parts.empty() ? std::string_view{} : parts[0];
  size_t expected = 1;
  if (kind == "constant") {
    f.kind = Kind::constant, f.a = parts.size() > 1 ? number(1) : 0.0f, expected = parts.size() > 1 ? 2 : 1;
  } else if (kind == "gaussian") {
    f.kind = Kind::gaussian, f.a = number(1), expected = 2;
  } else if (kind == "uniform") {
    f.kind = Kind::uniform, f.a = number(1), f.b = number(2), expected = 3;
  } else if (kind == "xavier") {
    f.kind = Kind::xavier;
  } else if (kind == "msra") {
    f.kind = Kind::msra;
  } else {
    throw options.error(key, "unknown filler '" + text +
                                 "' (expected constant, gaussian STD, uniform LO HI, xavier or msra)");
  }
  if (parts.size() != expected) throw options.error(key, "too many arguments in filler '" + text + "'");
  return f;
}

void Filler::fill(Tensor& tensor, Rng& rng, int64_t fan_in, int64_t fan_out) const {
  float* p = tensor.ptr();
  const int64_t n = tensor.count();
  switch (kind) {
    case Kind::constant:
      tensor.fill(a);
      break;
    case Kind::gaussian:
      for (int64_t i = 0; i < n; ++i) p[i] = rng.normal(0.0f, a);
      break;
    case Kind::uniform:
      for (int64_t i = 0; i < n; ++i) p[i] = rng.uniform(a, b);
      break;
    case Kind::xavier: {  // Caffe's variant: U(-s, s), s = sqrt(3 / fan_in)
      const float s = std::sqrt(3.0f / static_cast<float>(std::max<int64_t>(fan_in, 1)));
      for (int64_t i = 0; i < n; ++i) p[i] = rng.uniform(-s, s);
      break;
    }
    case Kind::msra: {  // He et al. 2015: N(0, 2 / fan_in)
      const float s = std::sqrt(2.0f / static_cast<float>(std::max<int64_t>(fan_in, 1)));
      for (int64_t i = 0; i < n; ++i) p[i] = rng.normal(0.0f, s);
      break;
    }
  }
  (void)fan_out;
}

}  // namespace taihu
