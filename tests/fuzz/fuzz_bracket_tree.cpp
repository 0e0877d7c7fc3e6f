// The bracket-tree (SST) reader, with and without a model's limits: a line is
// a tree or a DataError at its line and column.
#include "core/graph/bracket_tree_reader.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taihu;
  const auto text = taihu::fuzz::text_of(data, size);
  taihu::fuzz::expect_clean([&] { (void)parse_bracket_trees(text, VocabularyOptions{}, "fuzz.txt"); });
  taihu::fuzz::expect_clean(
      [&] { (void)parse_bracket_trees(text, VocabularyOptions{}, "fuzz.txt", TreeLimits{5, 2, "a binary model"}); });
  return 0;
}
