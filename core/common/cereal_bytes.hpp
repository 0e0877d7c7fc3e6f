#pragma once
// A value as Cereal's portable binary bytes, and back, strictly: decoding
// charges every container size to the payload (bounded_decode.hpp), and every
// byte must belong to the value (more is a made-up or foreign payload). For
// payloads that travel between actors or sit inside a framed file.

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include <sstream>
#include <string>
#include <string_view>

#include "core/common/bounded_decode.hpp"
#include "core/common/check.hpp"

namespace taihu {

template <class T>
std::string encode_bytes(const T& value) {
  std::ostringstream out;
  {
    cereal::PortableBinaryOutputArchive archive(out);
    archive(value);
  }
  return std::move(out).str();
}

// Throws taihu::Error naming `what` for bytes that are not exactly one T.
template <class T>
T decode_bytes(const std::string& bytes, std::string_view what) {
  std::istringstream in{bytes};
  T value;
  try {
    const DecodeBudget budget(bytes.size());
    cereal::PortableBinaryInputArchive archive(in);
    archive(bounded(value));
  } catch (const std::exception& e) {
    raise("{} cannot be decoded: {}", what, e.what());
  }
  const auto read = static_cast<std::size_t>(in.tellg());
  require(read == bytes.size(), "{} is malformed: {} bytes follow its {}", what, bytes.size() - read, read);
  return value;
}

}  // namespace taihu
