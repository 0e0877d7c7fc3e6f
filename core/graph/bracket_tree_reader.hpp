#pragma once
// Reader for trees in Penn-Treebank bracket form, one tree per line, as in the
// Stanford Sentiment Treebank: `(3 (2 It) (4 (2 's) (3 fun)))`. Every node
// carries an integer label; nodes may have any number of children; a leaf's
// token is every byte between the space after its label and the closing ')'
// (trimmed of ASCII blanks only), so tokens keep non-breaking spaces
// (U+00A0), `\/`, `-LRB-` and any other non-')' bytes as they are.

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/input_graph.hpp"
#include "core/graph/vocabulary.hpp"

namespace taihu {

// Maps a leaf's token text to the id stored in the graph.
using TokenMapper = std::function<int32_t(std::string_view)>;

// What the trees' consumer accepts, checked as they are read, so that a label
// or a node it cannot take is reported at its line and column when the data
// load, not at the first training step that meets it.
struct TreeLimits {
  int32_t classes = 0;       // labels in [0, classes); 0: any label
  int32_t max_children = 0;  // children per node; 0: any number
  std::string model;         // who sets max_children, for the message
};

// Parses one tree. Malformed input, and input beyond `limits`, throws
// DataError naming `source`, the line and the column (1-based, in bytes) of
// the problem; `first_line` is the line number of text's first line within
// `source`.
InputGraph parse_bracket_tree(std::string_view text, const TokenMapper& token_id,
                              std::string_view source = "<string>", int64_t first_line = 1,
                              const TreeLimits& limits = {});

struct TreeBank {
  std::vector<InputGraph> trees;
  Vocabulary vocabulary;
};

// Every non-blank line is one tree. The first form builds the vocabulary from
// these trees' leaves; the second maps tokens through a frozen vocabulary.
TreeBank parse_bracket_trees(std::string_view text, const VocabularyOptions& options,
                             std::string_view source = "<string>", const TreeLimits& limits = {});
std::vector<InputGraph> parse_bracket_trees(std::string_view text, const Vocabulary& vocabulary,
                                            std::string_view source = "<string>", const TreeLimits& limits = {});

// The same over a whole file (DataError if it cannot be read).
TreeBank read_bracket_trees(const std::filesystem::path& path, const VocabularyOptions& options,
                            const TreeLimits& limits = {});
std::vector<InputGraph> read_bracket_trees(const std::filesystem::path& path, const Vocabulary& vocabulary,
                                           const TreeLimits& limits = {});

}  // namespace taihu
