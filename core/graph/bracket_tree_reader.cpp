#include "core/graph/bracket_tree_reader.hpp"

#include <algorithm>
#include <string>

#include "core/common/check.hpp"
#include "core/data/file_bytes.hpp"

namespace taihu {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class BracketParser {
 public:
  BracketParser(std::string_view text, const TokenMapper& token_id, std::string_view source, int64_t first_line,
                const TreeLimits& limits)
      : text_(text), token_id_(token_id), source_(source), first_line_(first_line), limits_(limits) {}

  InputGraph parse() {
    // Every vertex opens one '(' and, but the root, is one edge.
    const auto opens = static_cast<int32_t>(std::count(text_.begin(), text_.end(), '('));
    graph_.reserve(opens, opens);
    skip_blanks();
    if (at_end()) fail(pos_, "empty input, expected '('");
    if (peek() != '(') fail(pos_, "expected '(' at the start of a tree, got '{}'", peek());
    while (true) {
      // At '(': a new node.
      const size_t open = pos_++;
      const int32_t label = read_label(open);
      if (at_end() || peek() == '\n') fail(open, "'(' is never closed");
      if (peek() == ')') fail(open, "empty node: label {} has neither a token nor children", label);
      if (!is_blank(peek())) fail(pos_, "expected a space after the label, got '{}'", peek());
      ++pos_;
      const size_t content = pos_;
      skip_blanks();
      if (!at_end() && peek() == '(') {
        frames_.push_back({label, pending_.size(), open});
        continue;
      }
      pending_.push_back(read_leaf(open, content, label));
      // After a complete subtree: more siblings, or closing parents.
      while (true) {
        skip_blanks();
        if (frames_.empty()) {
          if (!at_end()) fail(pos_, "unexpected text after the end of the tree (unbalanced ')' or a second tree)");
          return std::move(graph_);
        }
        if (at_end()) fail(frames_.back().open, "'(' is never closed (unbalanced parentheses)");
        if (peek() == '(') break;
        if (peek() != ')') fail(pos_, "expected '(' or ')' after a subtree, got '{}'", peek());
        ++pos_;
        const Frame frame = frames_.back();
        frames_.pop_back();
        const std::span<const int32_t> children(pending_.data() + frame.first_child,
                                                pending_.size() - frame.first_child);
        if (limits_.max_children > 0 && children.size() > static_cast<size_t>(limits_.max_children))
          fail(frame.open, "a node with {} children; {} takes at most {} per node", children.size(), limits_.model,
               limits_.max_children);
        const int32_t id = graph_.add_vertex(children, frame.label);
        pending_.resize(frame.first_child);
        pending_.push_back(id);
      }
    }
  }

 private:
  struct Frame {
    int32_t label;
    size_t first_child;
    size_t open;
  };

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  void skip_blanks() {
    while (!at_end() && is_blank(peek())) ++pos_;
  }

  int32_t read_label(size_t open) {
    skip_blanks();
    const size_t start = pos_;
    bool negative = false;
    if (!at_end() && peek() == '-') negative = true, ++pos_;
    int64_t value = 0;
    const size_t digits = pos_;
    while (!at_end() && is_digit(peek())) {
      value = value * 10 + (peek() - '0');
      if (value > INT32_MAX) fail(start, "label is out of range");
      ++pos_;
    }
    if (pos_ == digits) fail(start, "missing label: '(' at column {} must be followed by an integer label",
                             column_of(open));
    const auto label = static_cast<int32_t>(negative ? -value : value);
    if (limits_.classes > 0 && (label < 0 || label >= limits_.classes))
      fail(start, "label {} is outside [0, {}) (classes = {})", label, limits_.classes, limits_.classes);
    return label;
  }

  int32_t read_leaf(size_t open, size_t content, int32_t label) {
    size_t end = content;
    while (end < text_.size() && text_[end] != ')' && text_[end] != '\n') ++end;
    if (end >= text_.size() || text_[end] != ')')
      fail(open, "leaf '(' is never closed (unbalanced parentheses)");
    size_t first = content, last = end;
    while (first < last && (text_[first] == ' ' || text_[first] == '\t')) ++first;
    while (last > first && (text_[last - 1] == ' ' || text_[last - 1] == '\t' || text_[last - 1] == '\r')) --last;
    if (first == last) fail(open, "empty node: label {} has an empty token", label);
    pos_ = end + 1;
    return graph_.add_leaf(token_id_(text_.substr(first, last - first)), label);
  }

  int64_t column_of(size_t offset) const {
    const size_t line_start = text_.rfind('\n', offset == 0 ? 0 : offset - 1);
    const size_t begin = (line_start == std::string_view::npos || offset == 0) ? 0 : line_start + 1;
    return static_cast<int64_t>(offset - begin) + 1;
  }
  int64_t line_of(size_t offset) const {
    int64_t line = first_line_;
    for (size_t i = 0; i < offset && i < text_.size(); ++i) line += text_[i] == '\n';
    return line;
  }

  template <class... Args>
  [[noreturn]] void fail(size_t offset, fmt::format_string<Args...> format, Args&&... args) const {
    raise<DataError>("{}:{}:{}: malformed bracket tree: {}", source_, line_of(offset), column_of(offset),
                     fmt::format(format, std::forward<Args>(args)...));
  }

  std::string_view text_;
  const TokenMapper& token_id_;
  std::string_view source_;
  int64_t first_line_;
  const TreeLimits& limits_;
  size_t pos_ = 0;
  InputGraph graph_;
  std::vector<Frame> frames_;
  std::vector<int32_t> pending_;
};

bool blank_line(std::string_view line) {
  for (char c : line)
    if (!is_blank(c)) return false;
  return true;
}

// Calls f(line, line_number) for every non-blank line.
template <class F>
void for_each_line(std::string_view text, F&& f) {
  int64_t number = 1;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    if (!blank_line(line)) f(line, number);
    start = end + 1;
    ++number;
  }
}

std::string read_text(const std::filesystem::path& path) {
  const auto bytes = read_file_bytes(path);
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace

InputGraph parse_bracket_tree(std::string_view text, const TokenMapper& token_id, std::string_view source,
                              int64_t first_line, const TreeLimits& limits) {
  return BracketParser(text, token_id, source, first_line, limits).parse();
}

TreeBank parse_bracket_trees(std::string_view text, const VocabularyOptions& options, std::string_view source,
                             const TreeLimits& limits) {
  // One parse: leaves first hold their builder entry, remapped to vocabulary
  // ids once every count is known.
  VocabularyBuilder builder;
  const TokenMapper record = [&](std::string_view token) { return builder.add(token); };
  TreeBank bank;
  for_each_line(text, [&](std::string_view line, int64_t number) {
    bank.trees.push_back(parse_bracket_tree(line, record, source, number, limits));
  });
  bank.vocabulary = builder.build(options);
  std::vector<int32_t> entry_ids(static_cast<size_t>(builder.distinct()));
  for (size_t e = 0; e < entry_ids.size(); ++e)
    entry_ids[e] = bank.vocabulary.id(builder.entry_token(static_cast<int32_t>(e)));
  for (auto& tree : bank.trees)
    for (int32_t v = 0; v < tree.num_vertices(); ++v)
      if (tree.is_leaf(v)) tree.set_token(v, entry_ids[static_cast<size_t>(tree.token(v))]);
  return bank;
}

std::vector<InputGraph> parse_bracket_trees(std::string_view text, const Vocabulary& vocabulary,
                                            std::string_view source, const TreeLimits& limits) {
  const TokenMapper lookup = [&](std::string_view token) { return vocabulary.id(token); };
  std::vector<InputGraph> trees;
  for_each_line(text, [&](std::string_view line, int64_t number) {
    trees.push_back(parse_bracket_tree(line, lookup, source, number, limits));
  });
  return trees;
}

TreeBank read_bracket_trees(const std::filesystem::path& path, const VocabularyOptions& options,
                            const TreeLimits& limits) {
  return parse_bracket_trees(read_text(path), options, path.string(), limits);
}

std::vector<InputGraph> read_bracket_trees(const std::filesystem::path& path, const Vocabulary& vocabulary,
                                           const TreeLimits& limits) {
  return parse_bracket_trees(read_text(path), vocabulary, path.string(), limits);
}

}  // namespace taihu
