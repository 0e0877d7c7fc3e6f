#pragma once
// Tree workload files: a fixed set of trees (or chains) written once and read
// by every system under comparison (taihu's Cavs engine, the PyTorch
// baselines in bench/pytorch/), so that all of them train on the same shapes,
// tokens and labels. Plain text, one tree per three lines:
//
//   taihu-tree-workload 1           magic and format version
//   # any comment lines             (only before the first header key)
//   name sst-like                   one word
//   vocabulary 20000                token ids lie in [0, vocabulary)
//   classes 5                       label ids lie in [0, classes)
//   trees 8544                      number of trees that follow
//   vertices 318582                 their total vertex count (a check)
//   -1 ... per tree, line 1: parent of vertex i (root = -1); parents come
//                        after their children (parent > i), so the root is
//                        the last vertex; a parent's children are its
//                        vertices in increasing id order (left before right)
//   ... per tree, line 2: token id per vertex, -1 = none (internal vertices)
//   ... per tree, line 3: label per vertex, -1 = none
//
// Integers are separated by single spaces; every line ends with '\n'. A chain
// of n vertices is the tree 1 2 ... n-1 -1 (vertex i's parent is i + 1).

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/input_graph.hpp"

namespace taihu {

inline constexpr std::string_view tree_workload_magic = "taihu-tree-workload";
inline constexpr int tree_workload_version = 1;

struct TreeWorkload {
  std::string name;              // one word, no blanks
  int32_t vocabulary_size = 0;   // tokens in [0, vocabulary_size)
  int32_t num_classes = 0;       // labels in [0, num_classes)
  std::vector<std::string> comments;  // written as '# ...' lines (provenance)
  std::vector<InputGraph> trees;

  int64_t num_vertices() const;
};

// Writes the workload. Throws DataError if a graph cannot be written in
// parent form: it is empty, a vertex has more than one parent or none besides
// the root, a vertex's children are not in increasing id order, or a token or
// label lies outside the declared range.
void write_tree_workload(std::ostream& out, const TreeWorkload& workload);
void write_tree_workload(const std::filesystem::path& path, const TreeWorkload& workload);

// Parses a workload; malformed input throws DataError naming `source`, the
// line (1-based) and the problem.
TreeWorkload parse_tree_workload(std::string_view text, std::string_view source = "<string>");
TreeWorkload read_tree_workload(const std::filesystem::path& path);

}  // namespace taihu
