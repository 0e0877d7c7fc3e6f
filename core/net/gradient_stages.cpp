#include "core/net/gradient_stages.hpp"

#include "core/net/net.hpp"

namespace taihu {

std::vector<GradientStage> layer_stages(Net& net) {
  std::vector<GradientStage> stages(net.num_layers());
  for (std::size_t i = 0; i < net.num_layers(); ++i) {
    stages[i].name = net.layer(i).name();
    for (Param& p : net.layer(i).params())
      if (p.learnable && p.blob->count() > 0) stages[i].params.push_back(&p);
  }
  return stages;
}

}  // namespace taihu
