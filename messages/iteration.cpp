#include "messages/iteration.hpp"

#include <caf/deserializer.hpp>
#include <caf/error.hpp>
#include <caf/serializer.hpp>

#include <bit>

namespace taihu::msg {

caf::error inspect(caf::serializer& f, IterationDone& x) {
  auto bits = std::bit_cast<std::uint32_t>(x.loss);
  return f(caf::meta::type_name("taihu::msg::IterationDone"), x.iteration, x.rank, bits, x.stats);
}

caf::error inspect(caf::deserializer& f, IterationDone& x) {
  std::uint32_t bits = 0;
  auto error = f(caf::meta::type_name("taihu::msg::IterationDone"), x.iteration, x.rank, bits, x.stats);
  x.loss = std::bit_cast<float>(bits);
  return error;
}

}  // namespace taihu::msg
