#pragma once
// Container sizes in a Cereal payload checked against the payload itself.
//
// Cereal reads a container's element count and resizes the container before
// it reads a single element, so a payload of a few bytes that claims 2^40
// floats makes the loader allocate (and zero) terabytes before it finds the
// bytes missing. A checksum keeps accidents out of checkpoint files, not
// made-up ones, and payloads also arrive over the network.
//
// `bounded(x)` wraps a string, vector or pair for serialization: it saves
// exactly what Cereal saves for `x` (files stay compatible both ways), and on
// load charges every element count, times the fewest bytes one element can be
// encoded in, to the DecodeBudget of the payload being read, before anything
// is allocated. A legitimate payload never spends more than its own size; a
// made-up one is a cereal::Exception (and so an Error naming the file) as soon
// as its claims exceed it. What is allocated is then at most a small multiple
// of the payload's size.
//
// The budget is per thread, set by whoever decodes (a Cereal archive carries
// no state of the caller's); loading a bounded field without one is a
// logic_error, so that no decoder can forget it silently.

#include <cereal/cereal.hpp>

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace taihu {

class DecodeBudget {
 public:
  explicit DecodeBudget(std::size_t payload_bytes) : left_(payload_bytes), outer_(current_) { current_ = this; }
  ~DecodeBudget() { current_ = outer_; }
  DecodeBudget(const DecodeBudget&) = delete;
  DecodeBudget& operator=(const DecodeBudget&) = delete;

  // Charges `count` elements of at least `min_bytes` encoded bytes each to
  // the budget of the payload being decoded on this thread.
  static void charge(std::size_t count, std::size_t min_bytes) {
    if (current_ == nullptr) throw std::logic_error("taihu: a bounded field decoded without a DecodeBudget");
    const std::size_t per = min_bytes == 0 ? 1 : min_bytes;
    if (count > current_->left_ / per)
      throw cereal::Exception("a container claims " + std::to_string(count) + " elements, more than the " +
                              std::to_string(current_->left_) + " bytes left in the payload can hold");
    current_->left_ -= count * per;
  }

 private:
  std::size_t left_;
  DecodeBudget* outer_;
  static inline thread_local DecodeBudget* current_ = nullptr;
};

namespace bounded_detail {

// The fewest bytes Cereal's binary archives encode one T in: its size for a
// number or an array of numbers, a size tag (8 bytes) for a string or vector,
// the sum for a pair, what a class declares as `min_encoded_bytes`, else 1.
template <class T>
struct MinEncoded {
  static constexpr std::size_t value = [] {
    if constexpr (std::is_arithmetic_v<T>) return sizeof(T);
    else if constexpr (requires { T::min_encoded_bytes; }) return std::size_t{T::min_encoded_bytes};
    else return std::size_t{1};
  }();
};
template <class T, std::size_t N>
struct MinEncoded<std::array<T, N>> {
  static constexpr std::size_t value = N * MinEncoded<T>::value;
};
template <class T>
struct MinEncoded<std::vector<T>> {
  static constexpr std::size_t value = sizeof(cereal::size_type);
};
template <>
struct MinEncoded<std::string> {
  static constexpr std::size_t value = sizeof(cereal::size_type);
};
template <class First, class Second>
struct MinEncoded<std::pair<First, Second>> {
  static constexpr std::size_t value = MinEncoded<First>::value + MinEncoded<Second>::value;
};

// Declared first so that each finds the others for nested elements.
template <class Archive, class T>
void load_bounded(Archive& archive, T& value);
template <class Archive>
void load_bounded(Archive& archive, std::string& text);
template <class Archive, class T>
void load_bounded(Archive& archive, std::vector<T>& items);
template <class Archive, class First, class Second>
void load_bounded(Archive& archive, std::pair<First, Second>& pair);

template <class Archive, class T>
void load_bounded(Archive& archive, T& value) {
  archive(value);  // a scalar, or a class whose own serialize bounds its fields
}

template <class Archive>
void load_bounded(Archive& archive, std::string& text) {
  cereal::size_type size = 0;
  archive(cereal::make_size_tag(size));
  DecodeBudget::charge(static_cast<std::size_t>(size), 1);
  text.resize(static_cast<std::size_t>(size));
  archive(cereal::binary_data(text.data(), text.size()));
}

template <class Archive, class T>
void load_bounded(Archive& archive, std::vector<T>& items) {
  static_assert(!std::is_same_v<T, bool>, "vector<bool> has no bounded load");
  cereal::size_type size = 0;
  archive(cereal::make_size_tag(size));
  DecodeBudget::charge(static_cast<std::size_t>(size), MinEncoded<T>::value);
  items.resize(static_cast<std::size_t>(size));
  if constexpr (std::is_arithmetic_v<T>) {
    archive(cereal::binary_data(items.data(), items.size() * sizeof(T)));
  } else {
    for (T& item : items) load_bounded(archive, item);
  }
}

template <class Archive, class First, class Second>
void load_bounded(Archive& archive, std::pair<First, Second>& pair) {
  load_bounded(archive, pair.first);
  load_bounded(archive, pair.second);
}

template <class T>
struct Bounded {
  T& value;
  template <class Archive>
  void save(Archive& archive) const {
    archive(value);  // Cereal's own encoding, which load reads back
  }
  template <class Archive>
  void load(Archive& archive) {
    load_bounded(archive, value);
  }
};

}  // namespace bounded_detail

template <class T>
bounded_detail::Bounded<T> bounded(T& value) {
  return {value};
}

}  // namespace taihu
