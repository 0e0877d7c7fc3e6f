#pragma once
// Writes a labelled tree back in the bracket form bracket_tree_reader reads:
// `(label token)` for leaves, `(label child child ...)` for internal nodes.
// For debugging, data export and round-trip tests.

#include <string>

#include "core/graph/input_graph.hpp"
#include "core/graph/vocabulary.hpp"

namespace taihu {

// The tree under `root` (default: the last vertex, a tree's root). Vertices
// without a label are written with label 0; leaf tokens go through the
// vocabulary.
std::string format_bracket_tree(const InputGraph& tree, const Vocabulary& vocabulary, int32_t root = -1);

}  // namespace taihu
