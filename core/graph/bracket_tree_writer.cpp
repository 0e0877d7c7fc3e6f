#include "core/graph/bracket_tree_writer.hpp"

#include <fmt/format.h>

#include "core/common/check.hpp"

namespace taihu {
namespace {

void write(const InputGraph& tree, const Vocabulary& vocabulary, int32_t v, std::string& out) {
  out += '(';
  fmt::format_to(std::back_inserter(out), "{}", tree.label(v) < 0 ? 0 : tree.label(v));
  if (tree.is_leaf(v)) {
    out += ' ';
    out += vocabulary.token(tree.token(v) < 0 ? Vocabulary::unknown_id : tree.token(v));
  }
  for (int32_t child : tree.children(v)) {
    out += ' ';
    write(tree, vocabulary, child, out);
  }
  out += ')';
}

}  // namespace

std::string format_bracket_tree(const InputGraph& tree, const Vocabulary& vocabulary, int32_t root) {
  if (root < 0) root = tree.num_vertices() - 1;
  require<DataError>(root >= 0 && root < tree.num_vertices(), "format_bracket_tree: root {} is not a vertex of a {}-vertex graph",
                     root, tree.num_vertices());
  std::string out;
  write(tree, vocabulary, root, out);
  return out;
}

}  // namespace taihu
