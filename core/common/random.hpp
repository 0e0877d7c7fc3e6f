#pragma once
// A small, fast, seedable random generator (xoshiro256++) whose whole state
// is four words, so checkpoints can store it and resume bit-exactly.

#include <array>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace taihu {

// SplitMix64: expands a seed into well-mixed words; also a good hash step.
constexpr uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Derives an independent seed for a named stream (a layer, a worker).
constexpr uint64_t derive_seed(uint64_t seed, std::string_view stream) {
  uint64_t h = seed ^ 0xcbf29ce484222325ULL;
  for (char c : stream) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return splitmix64(h);
}

class Rng {
 public:
  using result_type = uint64_t;
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }

  explicit Rng(uint64_t seed = 0) { reseed(seed); }

  void reseed(uint64_t seed) {
    for (auto& word : state_) word = splitmix64(seed);
  }

  result_type operator()() {
    const uint64_t result = rotl(state_[0] + state_[3], 23) + state_[0];
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1).
  float uniform() { return static_cast<float>((*this)() >> 40) * 0x1.0p-24f; }
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>((*this)()) * n) >> 64); }
  // Standard normal by Box-Muller (one value per call; simple and deterministic).
  float normal(float mean = 0.0f, float stddev = 1.0f) {
    double u1 = ((*this)() >> 11) * 0x1.0p-53;
    double u2 = ((*this)() >> 11) * 0x1.0p-53;
    if (u1 < 1e-300) u1 = 1e-300;
    return mean + stddev * static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                                              std::cos(6.283185307179586 * u2));
  }

  const std::array<uint64_t, 4>& state() const { return state_; }
  void set_state(const std::array<uint64_t, 4>& state) { state_ = state; }

  template <class Archive>
  void serialize(Archive& archive) {
    archive(state_);
  }

  friend bool operator==(const Rng&, const Rng&) = default;

 private:
  static constexpr uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<uint64_t, 4> state_{};
};

}  // namespace taihu
