#include "core/compress/compressor.hpp"

#include <algorithm>
#include <cmath>

#include "core/common/check.hpp"
#include "core/common/multiversion.hpp"
#include "core/compress/scan_kernel.hpp"

namespace taihu::compress {

std::string_view method_name(Method method) {
  switch (method) {
    case Method::dense: return "dense";
    case Method::fp16: return "fp16";
    case Method::topk: return "topk";
    case Method::trimmed: return "trimmed";
    case Method::bsearch: return "bsearch";
    case Method::dgc: return "dgc";
    case Method::randomk: return "randomk";
  }
  return "?";
}

double DensitySchedule::at(std::uint64_t iteration) const {
  if (iteration < dense_iterations) return 1.0;
  const std::uint64_t stage = stage_iterations == 0 ? ramp_stages : (iteration - dense_iterations) / stage_iterations;
  if (ramp_stages > 0 && stage < static_cast<std::uint64_t>(ramp_stages)) {
    const double c = std::pow(density, 1.0 / (ramp_stages + 1));
    return std::pow(c, static_cast<double>(stage + 1));
  }
  return density;
}

float local_clip_factor(double squared_norm, float clip_norm, int workers) {
  if (clip_norm <= 0 || squared_norm <= 0) return 1.0f;
  const double limit = clip_norm / std::sqrt(static_cast<double>(std::max(workers, 1)));
  const double norm = std::sqrt(squared_norm);
  return norm > limit ? static_cast<float>(limit / norm) : 1.0f;
}

Compressor::Compressor(std::size_t elements, Options options)
    : options_(options),
      residual_(elements, 0.0f),
      reuse_(std::max(options.reuse_interval, 1), options.bsearch_eps),
      rng_(derive_seed(options.seed, "compress")) {
  require(elements <= 0xFFFFFFFFu, "compressor: {} elements exceed 32-bit indices", elements);
  require(options.schedule.density > 0 && options.schedule.density <= 1, "compressor: density {} not in (0, 1]",
          options.schedule.density);
  require(!(options.quantize && options.reuse_interval > 1),
          "compressor: sign-alternating quantization cannot reuse thresholds");
  require(!options.quantize || (is_sparse(options.method) && options.method != Method::randomk),
          "compressor: quantization needs a top-k or threshold selector, not {}", method_name(options.method));
  if (options.momentum > 0) velocity_.assign(elements, 0.0f);
}

float Compressor::effective_scale(std::span<const float> grad, float scale) {
  clip_factor_ = 1.0f;
  if (options_.clip_norm > 0) {
    double sq = 0;
    for (float g : grad) sq += static_cast<double>(g) * g;
    clip_factor_ = local_clip_factor(sq * static_cast<double>(scale) * scale, options_.clip_norm, options_.workers);
  }
  return scale * clip_factor_;
}

CompressorState Compressor::state() const {
  return {residual_, velocity_, iteration_, positive_turn_, reuse_.state(), rng_.state()};
}

void Compressor::restore(const CompressorState& s) {
  require(s.residual.size() == residual_.size() && s.velocity.size() == velocity_.size(),
          "compressor state of {} floats ({} of momentum) for a compressor of {} ({})", s.residual.size(),
          s.velocity.size(), residual_.size(), velocity_.size());
  residual_ = s.residual;
  velocity_ = s.velocity;
  iteration_ = s.iteration;
  positive_turn_ = s.positive_turn;
  reuse_.restore(s.reuse);
  rng_.set_state(s.rng);
}

// Built for AVX2 too: there the fmas are instructions, not calls.
TAIHU_MULTIVERSION void Compressor::accumulate(std::span<const float> grad, float scale) {
  require(grad.size() == residual_.size(), "compressor: gradient of {} floats, expected {}", grad.size(),
          residual_.size());
  const float s = effective_scale(grad, scale);
  const std::size_t n = grad.size();
  const float* g = grad.data();
  float* v = residual_.data();
  // Every multiply-add is an explicit fma: the floats must not depend on
  // whether the compiler contracts (GCC does by default in C++).
  if (velocity_.empty()) {
    for (std::size_t i = 0; i < n; ++i) v[i] = std::fma(s, g[i], v[i]);
  } else if (options_.nesterov) {
    const float m = options_.momentum;
    float* u = velocity_.data();
    for (std::size_t i = 0; i < n; ++i) {
      u[i] = m * std::fma(s, g[i], u[i]);
      v[i] = std::fma(s, g[i], v[i] + u[i]);
    }
  } else {
    const float m = options_.momentum;
    float* u = velocity_.data();
    for (std::size_t i = 0; i < n; ++i) {
      u[i] = std::fma(m, u[i], s * g[i]);
      v[i] = v[i] + u[i];
    }
  }
}

void Compressor::emit(PackedWriter& writer, std::size_t offset, const Prescan* pre) {
  const std::size_t n = residual_.size();
  const Method method = options_.method;
  const bool warmup = options_.schedule.dense_at(iteration_);
  selection_.clear();
  info_ = {};
  ++iteration_;
  if (method == Method::dense || (warmup && is_sparse(method))) {
    writer.dense_f32(offset, residual_);
    std::fill(residual_.begin(), residual_.end(), 0.0f);
    last_entries_ = n;
    return;
  }
  if (method == Method::fp16) {
    halves_.resize(n);
    dehalved_.resize(n);
    to_half(residual_, halves_);
    writer.dense_f16(offset, halves_);
    if (options_.error_feedback) {
      // |V - half(V)| is within half(V)'s rounding, so the subtraction is exact (Sterbenz).
      from_half(halves_, dehalved_);
      for (std::size_t i = 0; i < n; ++i) residual_[i] -= dehalved_[i];
    } else {
      std::fill(residual_.begin(), residual_.end(), 0.0f);
    }
    last_entries_ = n;
    return;
  }

  const std::size_t k = count_for_density(n, options_.schedule.at(iteration_ - 1));
  const Key key = !options_.quantize ? Key::magnitude : positive_turn_ ? Key::positive : Key::negative;
  std::span<const float> v = residual_;
  switch (method) {
    case Method::topk: exact_topk(v, k, key, selection_, scratch_, &info_, pre); break;
    case Method::trimmed: trimmed_topk(v, k, key, selection_, scratch_, &info_); break;
    case Method::bsearch:
      if (options_.reuse_interval > 1)
        reuse_.select(v, k, key, selection_, scratch_, &info_, pre);
      else
        threshold_search(v, k, key, selection_, scratch_, options_.bsearch_eps, &info_, pre);
      break;
    case Method::dgc: dgc_sample_select(v, k, key, rng_, selection_, scratch_, &info_); break;
    case Method::randomk: random_k(v, k, rng_, selection_); break;
    default: break;
  }
  const auto& idx = selection_.index;
  if (options_.quantize) {
    double sum = 0;
    for (float x : selection_.value) sum += x;
    const float mean = selection_.size() == 0 ? 0.0f : static_cast<float>(sum / selection_.size());
    writer.sparse_mean(offset, n, idx, mean);
    for (auto i : idx) residual_[i] -= mean;
    positive_turn_ = !positive_turn_;
  } else {
    if (method == Method::randomk && !options_.error_feedback && !selection_.value.empty()) {
      // Without error feedback random-k scales by n/k, so the sent sum is unbiased (BytePS).
      const float up = static_cast<float>(static_cast<double>(n) / selection_.size());
      for (auto& x : selection_.value) x *= up;
    }
    writer.sparse(offset, n, idx, selection_.value);
    for (auto i : idx) residual_[i] = 0.0f;
  }
  if (!options_.error_feedback) std::fill(residual_.begin(), residual_.end(), 0.0f);
  if (!velocity_.empty() && options_.momentum_masking)
    for (auto i : idx) velocity_[i] = 0.0f;
  last_entries_ = selection_.size();
}

namespace {

enum class Momentum { none, vanilla, nesterov };

#if TAIHU_X86_KERNELS
// 8 entries of the fused pass's update, for scan_kernel's AVX2 loop: the
// same fused multiply-adds as produce1 below, so the same bits.
template <Momentum M>
struct FusedUpdate8 {
  const float* g;
  float s, m;
  float* u;
  float* v;
  TAIHU_TARGET_AVX2 __m256 operator()(std::size_t i) const {
    const __m256 sv = _mm256_set1_ps(s), mv = _mm256_set1_ps(m);
    const __m256 gi = _mm256_loadu_ps(g + i);
    __m256 vn;
    if constexpr (M == Momentum::none) {
      vn = _mm256_fmadd_ps(sv, gi, _mm256_loadu_ps(v + i));
    } else if constexpr (M == Momentum::vanilla) {
      const __m256 un = _mm256_fmadd_ps(mv, _mm256_loadu_ps(u + i), _mm256_mul_ps(sv, gi));
      _mm256_storeu_ps(u + i, un);
      vn = _mm256_add_ps(_mm256_loadu_ps(v + i), un);
    } else {
      const __m256 un = _mm256_mul_ps(mv, _mm256_fmadd_ps(sv, gi, _mm256_loadu_ps(u + i)));
      _mm256_storeu_ps(u + i, un);
      vn = _mm256_fmadd_ps(sv, gi, _mm256_add_ps(_mm256_loadu_ps(v + i), un));
    }
    _mm256_storeu_ps(v + i, vn);
    return vn;
  }
};
#endif

// The fused pass: V (and U) updated exactly as accumulate() does, the new V
// scanned as the selectors' prescan would (stats + entries above t).
template <Key K, Momentum M>
std::size_t fused_pass(const float* g, float s, float m, float* u, float* v, std::size_t n, float t,
                       Selection& cand, std::size_t cap, KeyStats& stats) {
  cand.index.resize(cap);
  cand.value.resize(cap);
  double sum = 0;
  float mx = 0;
#if TAIHU_X86_KERNELS
  const FusedUpdate8<M> produce{g, s, m, u, v};
#else
  const int produce = 0;  // no vector loop
#endif
  auto produce1 = [=](std::size_t i) {
    if constexpr (M == Momentum::none) {
      v[i] = std::fma(s, g[i], v[i]);
    } else if constexpr (M == Momentum::vanilla) {
      u[i] = std::fma(m, u[i], s * g[i]);
      v[i] = v[i] + u[i];
    } else {
      u[i] = m * std::fma(s, g[i], u[i]);
      v[i] = std::fma(s, g[i], v[i] + u[i]);
    }
    return v[i];
  };
  const std::size_t count = detail::scan_kernel<K, true>(v, n, t, cand.index.data(), cand.value.data(), cap, &sum,
                                                         &mx, produce, produce1);
  cand.index.resize(std::min(count, cap));
  cand.value.resize(std::min(count, cap));
  stats.mean_abs = n == 0 ? 0.0 : sum / static_cast<double>(n);
  stats.max_key = mx;
  return count;
}

}  // namespace

void Compressor::step(std::span<const float> grad, float scale, PackedWriter& writer, std::size_t offset) {
  const std::size_t n = residual_.size();
  const Method method = options_.method;
  const bool fusable = (method == Method::topk || method == Method::bsearch) && !options_.schedule.dense_at(iteration_);
  const std::size_t k = count_for_density(n, options_.schedule.at(iteration_));
  if (!fusable || k == 0 || k >= n || grad.size() != n) {
    accumulate(grad, scale);
    emit(writer, offset);
    return;
  }
  const Key key = !options_.quantize ? Key::magnitude : positive_turn_ ? Key::positive : Key::negative;
  const float s = effective_scale(grad, scale);
  const float m = options_.momentum;
  const Momentum kind = velocity_.empty() ? Momentum::none : options_.nesterov ? Momentum::nesterov : Momentum::vanilla;
  const float* g = grad.data();
  float* u = velocity_.data();
  float* v = residual_.data();
  Prescan pre;
  const bool reuse = method == Method::bsearch && options_.reuse_interval > 1;
  if (reuse && reuse_.reusing(n, k)) {
    pre.t_lo = reuse_.threshold();
    pre.cap = 4 * k;
  } else {
    // The updated value at i, computed as the pass will (without storing it).
    auto updated = [&](std::size_t i) {
      switch (kind) {
        case Momentum::none: return std::fma(s, g[i], v[i]);
        case Momentum::vanilla: return v[i] + std::fma(m, u[i], s * g[i]);
        default: return std::fma(s, g[i], v[i] + m * std::fma(s, g[i], u[i]));
      }
    };
    const PrescanFor what = method == Method::topk ? PrescanFor::exact : PrescanFor::search;
    if (!detail::sample_threshold_of(n, detail::prescan_keep(what, k), key, scratch_.keys, pre.t_lo, updated)) {
      accumulate(grad, scale);
      emit(writer, offset);
      return;
    }
    pre.cap = prescan_cap(what, k);
  }
  auto run = [&](auto key_tag, auto momentum_tag) {
    pre.count = fused_pass<decltype(key_tag)::value, decltype(momentum_tag)::value>(
        g, s, m, u, v, n, pre.t_lo, scratch_.candidates, pre.cap, pre.stats);
  };
  auto with_key = [&](auto momentum_tag) {
    switch (key) {
      case Key::magnitude: run(std::integral_constant<Key, Key::magnitude>{}, momentum_tag); break;
      case Key::positive: run(std::integral_constant<Key, Key::positive>{}, momentum_tag); break;
      default: run(std::integral_constant<Key, Key::negative>{}, momentum_tag); break;
    }
  };
  switch (kind) {
    case Momentum::none: with_key(std::integral_constant<Momentum, Momentum::none>{}); break;
    case Momentum::vanilla: with_key(std::integral_constant<Momentum, Momentum::vanilla>{}); break;
    default: with_key(std::integral_constant<Momentum, Momentum::nesterov>{}); break;
  }
  emit(writer, offset, &pre);
}

BucketCompressor::BucketCompressor(std::size_t elements, std::vector<Segment> segments)
    : elements_(elements), segments_(std::move(segments)) {
  std::size_t at = 0;
  parts_.reserve(segments_.size());
  for (const auto& s : segments_) {
    require(s.offset == at, "bucket compressor: segment '{}' starts at {}, expected {}", s.name, s.offset, at);
    at += s.count;
    parts_.emplace_back(s.count, s.options);
  }
  require(at == elements, "bucket compressor: segments cover {} of {} floats", at, elements);
}

void BucketCompressor::compress(std::span<const float> grad, float scale, std::vector<std::uint32_t>& message) {
  require(grad.size() == elements_, "bucket compressor: gradient of {} floats, expected {}", grad.size(), elements_);
  PackedWriter writer(message, elements_);
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    const auto& s = segments_[i];
    parts_[i].step(grad.subspan(s.offset, s.count), scale, writer, s.offset);
  }
}

std::size_t BucketCompressor::max_message_words() const {
  std::vector<std::size_t> lengths;  // compress() writes one block per segment
  for (const auto& s : segments_) lengths.push_back(s.count);
  return max_packed_words(lengths);
}

std::size_t BucketCompressor::last_sent_entries() const {
  std::size_t total = 0;
  for (const auto& p : parts_) total += p.last_sent_entries();
  return total;
}

bool BucketCompressor::all_dense() const {
  return std::all_of(parts_.begin(), parts_.end(),
                     [](const Compressor& c) { return c.options().method == Method::dense; });
}

std::vector<CompressorState> BucketCompressor::state() const {
  std::vector<CompressorState> out;
  for (const auto& c : parts_) out.push_back(c.state());
  return out;
}

void BucketCompressor::restore(const std::vector<CompressorState>& states) {
  require(states.size() == parts_.size(), "compressor state of {} segments for a bucket of {}", states.size(),
          parts_.size());
  for (std::size_t i = 0; i < parts_.size(); ++i) parts_[i].restore(states[i]);
}

}  // namespace taihu::compress
