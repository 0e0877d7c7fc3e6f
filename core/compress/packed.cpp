#include "core/compress/packed.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "core/common/check.hpp"
#include "core/common/cpu_features.hpp"
#include "core/common/multiversion.hpp"
#include "core/compress/half.hpp"

#if TAIHU_X86_KERNELS
#include <immintrin.h>
#endif

namespace taihu::compress {
namespace {

constexpr std::size_t header_words = 4;
constexpr std::size_t block_header_words = 4;
constexpr float half_max = 65504.0f;

std::uint32_t word_of(float f) { return std::bit_cast<std::uint32_t>(f); }
float float_of(std::uint32_t w) { return std::bit_cast<float>(w); }

std::uint32_t checked32(std::size_t v, const char* what) {
  require(v <= 0xFFFFFFFFu, "packed message: {} {} does not fit 32 bits", what, v);
  return static_cast<std::uint32_t>(v);
}

}  // namespace

PackedWriter::PackedWriter(std::vector<std::uint32_t>& words, std::size_t extent) : words_(words), extent_(extent) {
  words_.clear();
  words_.push_back(packed_magic);
  words_.push_back(packed_version);
  words_.push_back(checked32(extent, "extent"));
  words_.push_back(0);
}

std::size_t PackedWriter::begin_block(BlockKind kind, std::size_t offset, std::size_t length, std::size_t count,
                                      std::size_t payload_words) {
  require(offset + length <= extent_, "packed message: block [{}, {}) outside the bucket of {} floats", offset,
          offset + length, extent_);
  words_[3] += 1;
  const std::size_t at = words_.size();
  words_.resize(at + block_header_words + payload_words);
  words_[at] = static_cast<std::uint32_t>(kind);
  words_[at + 1] = checked32(offset, "offset");
  words_[at + 2] = checked32(length, "length");
  words_[at + 3] = checked32(count, "count");
  return at + block_header_words;
}

std::size_t max_packed_words(std::span<const std::size_t> block_lengths) {
  std::size_t words = header_words;
  for (std::size_t length : block_lengths) words += block_header_words + std::max(2 * length, length + 1);
  return words;
}

void PackedWriter::dense_f32(std::size_t offset, std::span<const float> values) {
  const std::size_t at = begin_block(BlockKind::dense_f32, offset, values.size(), values.size(), values.size());
  if (!values.empty()) std::memcpy(words_.data() + at, values.data(), values.size_bytes());
}

void PackedWriter::dense_f16(std::size_t offset, std::span<const std::uint16_t> halves) {
  const std::size_t n = halves.size();
  const std::size_t at = begin_block(BlockKind::dense_f16, offset, n, n, (n + 1) / 2);
  // resize() zeroed the payload, so an odd count's padding half reads as +0.
  if (n > 0) std::memcpy(words_.data() + at, halves.data(), n * sizeof(std::uint16_t));
}

void PackedWriter::sparse(std::size_t offset, std::size_t length, std::span<const std::uint32_t> index,
                          std::span<const float> value) {
  require(index.size() == value.size(), "packed message: {} indices but {} values", index.size(), value.size());
  const std::size_t k = index.size();
  const std::size_t at = begin_block(BlockKind::sparse, offset, length, k, 2 * k);
  if (k == 0) return;
  std::memcpy(words_.data() + at, index.data(), k * 4);
  std::memcpy(words_.data() + at + k, value.data(), k * 4);
}

void PackedWriter::sparse_mean(std::size_t offset, std::size_t length, std::span<const std::uint32_t> index,
                               float mean) {
  const std::size_t k = index.size();
  const std::size_t at = begin_block(BlockKind::sparse_mean, offset, length, k, k + 1);
  if (k > 0) std::memcpy(words_.data() + at, index.data(), k * 4);
  words_[at + k] = word_of(mean);
}

namespace {

// Walks the blocks, checking sizes; f(kind, offset, length, count, payload).
template <class F>
void for_each_block(std::span<const std::uint32_t> m, std::size_t extent, F&& f) {
  require(m.size() >= header_words && m[0] == packed_magic, "packed message: bad header ({} words)", m.size());
  require(m[1] == packed_version, "packed message: version {} (expected {})", m[1], packed_version);
  require(m[2] == extent, "packed message: bucket of {} floats, expected {}", m[2], extent);
  std::size_t at = header_words;
  for (std::uint32_t b = 0; b < m[3]; ++b) {
    require(at + block_header_words <= m.size(), "packed message: block {} truncated", b);
    const auto kind = static_cast<BlockKind>(m[at]);
    const std::size_t offset = m[at + 1], length = m[at + 2], count = m[at + 3];
    require(offset + length <= extent, "packed message: block {} covers [{}, {}) of {}", b, offset, offset + length,
            extent);
    std::size_t payload = 0;
    switch (kind) {
      case BlockKind::dense_f32: payload = length; break;
      case BlockKind::dense_f16: payload = (length + 1) / 2; break;
      case BlockKind::sparse: payload = 2 * count; break;
      case BlockKind::sparse_mean: payload = count + 1; break;
      default: raise("packed message: block {} has unknown kind {}", b, m[at]);
    }
    require((kind != BlockKind::dense_f32 && kind != BlockKind::dense_f16) || count == length,
            "packed message: dense block {} counts {} of {}", b, count, length);
    at += block_header_words;
    require(at + payload <= m.size(), "packed message: block {} payload truncated", b);
    f(kind, offset, length, count, m.subspan(at, payload));
    at += payload;
  }
  require(at == m.size(), "packed message: {} trailing words", m.size() - at);
}

}  // namespace

void decompress_add(std::span<const std::uint32_t> message, std::span<float> dense) {
  for_each_block(message, dense.size(),
                 [&](BlockKind kind, std::size_t offset, std::size_t length, std::size_t count,
                     std::span<const std::uint32_t> payload) {
                   float* out = dense.data() + offset;
                   switch (kind) {
                     case BlockKind::dense_f32:
                       for (std::size_t i = 0; i < length; ++i) out[i] += float_of(payload[i]);
                       break;
                     case BlockKind::dense_f16: {
                       // In chunks through stack buffers: no allocation per message.
                       constexpr std::size_t chunk = 512;
                       std::uint16_t halves[chunk];
                       float floats[chunk];
                       const auto* bytes = reinterpret_cast<const unsigned char*>(payload.data());
                       for (std::size_t at = 0; at < length; at += chunk) {
                         const std::size_t m = std::min(chunk, length - at);
                         std::memcpy(halves, bytes + 2 * at, 2 * m);
                         from_half({halves, m}, {floats, m});
                         for (std::size_t i = 0; i < m; ++i) out[at + i] += floats[i];
                       }
                       break;
                     }
                     case BlockKind::sparse: {
                       const std::uint32_t* idx = payload.data();
                       const std::uint32_t* val = payload.data() + count;
                       for (std::size_t j = 0; j < count; ++j)
                         require(idx[j] < length, "packed message: index {} outside a block of {}", idx[j], length);
                       for (std::size_t j = 0; j < count; ++j) out[idx[j]] += float_of(val[j]);
                       break;
                     }
                     case BlockKind::sparse_mean: {
                       const float mean = float_of(payload[count]);
                       for (std::size_t j = 0; j < count; ++j)
                         require(payload[j] < length, "packed message: index {} outside a block of {}", payload[j],
                                 length);
                       for (std::size_t j = 0; j < count; ++j) out[payload[j]] += mean;
                       break;
                     }
                   }
                 });
}

void decompress_sum(std::span<const std::span<const std::uint32_t>> messages, std::span<float> dense) {
  std::fill(dense.begin(), dense.end(), 0.0f);
  for (auto m : messages) decompress_add(m, dense);
}

void decompress_add(std::span<const float> message, std::span<float> dense) {
  thread_local std::vector<std::uint32_t> words;
  words.resize(message.size());
  if (!message.empty()) std::memcpy(words.data(), message.data(), message.size_bytes());
  decompress_add(std::span<const std::uint32_t>(words), dense);
}

void decompress_sum(std::span<const std::span<const float>> messages, std::span<float> dense) {
  std::fill(dense.begin(), dense.end(), 0.0f);
  for (auto m : messages) decompress_add(m, dense);
}

std::size_t packed_entries(std::span<const std::uint32_t> message) {
  require(message.size() >= header_words, "packed message: bad header ({} words)", message.size());
  std::size_t entries = 0;
  for_each_block(message, message[2],
                 [&](BlockKind, std::size_t, std::size_t, std::size_t count, std::span<const std::uint32_t>) {
                   entries += count;
                 });
  return entries;
}

#if TAIHU_X86_KERNELS
namespace {

// F16C conversions; the generic ones (half.hpp) give the same bits (tested).
TAIHU_TARGET_AVX2 void to_half_f16c(std::span<const float> in, std::span<std::uint16_t> out) {
  std::size_t i = 0;
  const __m256 hi = _mm256_set1_ps(half_max), lo = _mm256_set1_ps(-half_max);
  for (; i + 8 <= in.size(); i += 8) {
    // min/max return their second operand for a NaN, which keeps NaN.
    const __m256 v = _mm256_max_ps(lo, _mm256_min_ps(hi, _mm256_loadu_ps(in.data() + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out.data() + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < in.size(); ++i) {
    const __m128 v = _mm_max_ss(_mm_set_ss(-half_max), _mm_min_ss(_mm_set_ss(half_max), _mm_set_ss(in[i])));
    out[i] = static_cast<std::uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT), 0));
  }
}

TAIHU_TARGET_AVX2 void from_half_f16c(std::span<const std::uint16_t> in, std::span<float> out) {
  std::size_t i = 0;
  for (; i + 8 <= in.size(); i += 8)
    _mm256_storeu_ps(out.data() + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in.data() + i))));
  for (; i < in.size(); ++i) out[i] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(in[i])));
}

}  // namespace
#endif

void to_half(std::span<const float> in, std::span<std::uint16_t> out) {
  require(in.size() == out.size(), "to_half: {} floats into {} halves", in.size(), out.size());
#if TAIHU_X86_KERNELS
  if (cpu::use_avx2()) return to_half_f16c(in, out);
#endif
  for (std::size_t i = 0; i < in.size(); ++i) {
    const float v = in[i] != in[i] ? in[i] : std::clamp(in[i], -half_max, half_max);
    out[i] = half_bits(v);
  }
}

void from_half(std::span<const std::uint16_t> in, std::span<float> out) {
  require(in.size() == out.size(), "from_half: {} halves into {} floats", in.size(), out.size());
#if TAIHU_X86_KERNELS
  if (cpu::use_avx2()) return from_half_f16c(in, out);
#endif
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = float_of_half(in[i]);
}

std::vector<float> words_as_floats(std::span<const std::uint32_t> words) {
  std::vector<float> out(words.size());
  if (!words.empty()) std::memcpy(out.data(), words.data(), words.size_bytes());
  return out;
}

std::vector<std::uint32_t> floats_as_words(std::span<const float> floats) {
  std::vector<std::uint32_t> out(floats.size());
  if (!floats.empty()) std::memcpy(out.data(), floats.data(), floats.size_bytes());
  return out;
}

}  // namespace taihu::compress
