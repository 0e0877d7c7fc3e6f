#include "messages/type_ids.hpp"

#include <caf/actor_system.hpp>
#include <caf/uniform_type_info_map.hpp>

#include <utility>

namespace taihu::msg {
namespace {

template <caf::type_id_t... Ids>
std::vector<std::string> names(std::integer_sequence<caf::type_id_t, Ids...>) {
  return {caf::type_name_by_id<caf::id_block::taihu::begin + Ids>::value...};
}

}  // namespace

std::vector<std::string> registered_type_names() {
  return names(std::make_integer_sequence<caf::type_id_t, caf::id_block::taihu::end - caf::id_block::taihu::begin>{});
}

std::vector<std::string> missing_message_types(caf::actor_system& system) {
  std::vector<std::string> missing;
  for (const auto& name : registered_type_names()) {
    if (!system.types().make_value(name)) missing.push_back(name);
  }
  return missing;
}

}  // namespace taihu::msg
