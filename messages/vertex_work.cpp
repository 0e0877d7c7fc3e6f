#include "messages/vertex_work.hpp"

namespace taihu::msg {

const char* step_name(VertexStep step) {
  switch (step) {
    case VertexStep::inputs: return "inputs";
    case VertexStep::forward_eager: return "forward_eager";
    case VertexStep::forward_round: return "forward_round";
    case VertexStep::forward_lazy: return "forward_lazy";
    case VertexStep::backward_lazy: return "backward_lazy";
    case VertexStep::backward_round: return "backward_round";
    case VertexStep::backward_eager: return "backward_eager";
    case VertexStep::weight_gradients: return "weight_gradients";
    case VertexStep::metrics: return "metrics";
  }
  return "?";
}

}  // namespace taihu::msg
