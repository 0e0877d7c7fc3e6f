#include "core/graph/tree_workload_io.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <ostream>
#include <system_error>

#include "core/common/check.hpp"
#include "core/data/file_bytes.hpp"

namespace taihu {
namespace {

bool is_word(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') return false;
  return true;
}

// Parent of every vertex (root = -1), checking that the graph is one tree
// whose children are listed in increasing id order.
std::vector<int32_t> parents_of(const InputGraph& tree, size_t index) {
  const int32_t n = tree.num_vertices();
  require<DataError>(n > 0, "tree workload: tree {} is empty", index);
  std::vector<int32_t> parent(static_cast<size_t>(n), InputGraph::none);
  for (int32_t v = 0; v < n; ++v) {
    int32_t previous = -1;
    for (int32_t child : tree.children(v)) {
      require<DataError>(child > previous,
                         "tree workload: tree {}, vertex {}: children must be in increasing id order to be "
                         "written as parent indices, got {} after {}",
                         index, v, child, previous);
      require<DataError>(parent[child] == InputGraph::none,
                         "tree workload: tree {}, vertex {} has two parents ({} and {}); only trees can be written",
                         index, child, parent[child], v);
      parent[child] = v;
      previous = child;
    }
  }
  for (int32_t v = 0; v + 1 < n; ++v)
    require<DataError>(parent[v] != InputGraph::none,
                       "tree workload: tree {}, vertex {} has no parent but is not the root (the last vertex); "
                       "a forest cannot be written",
                       index, v);
  return parent;
}

void check_range(std::span<const int32_t> ids, int32_t size, size_t index, const char* what) {
  for (size_t v = 0; v < ids.size(); ++v)
    require<DataError>(ids[v] >= -1 && ids[v] < size,
                       "tree workload: tree {}, vertex {} has {} {}, outside [-1, {})", index, v, what, ids[v], size);
}

void append_line(fmt::memory_buffer& buffer, std::span<const int32_t> values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) buffer.push_back(' ');
    fmt::format_to(std::back_inserter(buffer), "{}", values[i]);
  }
  buffer.push_back('\n');
}

class WorkloadParser {
 public:
  WorkloadParser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  TreeWorkload parse() {
    TreeWorkload w;
    std::string_view line = next_line("the header");
    const auto magic = split_key(line);
    if (magic.first != tree_workload_magic)
      fail("not a tree workload: expected '{} {}' on the first line", tree_workload_magic, tree_workload_version);
    if (parse_int(magic.second, "format version") != tree_workload_version)
      fail("format version {} is not supported (this reader reads version {})", magic.second, tree_workload_version);
    line = next_line("the header");
    while (!line.empty() && line.front() == '#') {
      line.remove_prefix(1);
      if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      w.comments.emplace_back(line);
      line = next_line("the header");
    }
    w.name = std::string(header_value(line, "name"));
    if (!is_word(w.name)) fail("the name must be one word, got '{}'", w.name);
    w.vocabulary_size = header_count(next_line("the header"), "vocabulary");
    w.num_classes = header_count(next_line("the header"), "classes");
    const int32_t trees = header_count(next_line("the header"), "trees");
    const int64_t declared_vertices = header_count(next_line("the header"), "vertices");
    w.trees.reserve(static_cast<size_t>(trees));
    int64_t vertices = 0;
    for (int32_t t = 0; t < trees; ++t) {
      w.trees.push_back(parse_tree(t, w));
      vertices += w.trees.back().num_vertices();
    }
    while (pos_ < text_.size()) {
      line = next_line("");
      if (line.find_first_not_of(" \t\r") != std::string_view::npos)
        fail("text after the {} trees the header declares", trees);
    }
    if (vertices != declared_vertices)
      raise<DataError>("{}: the trees have {} vertices in all, but the header declares {}", source_, vertices,
                       declared_vertices);
    return w;
  }

 private:
  InputGraph parse_tree(int32_t t, const TreeWorkload& w) {
    read_ints(next_line(fmt::format("tree {}'s parent line", t)), parents_, "parent");
    const size_t n = parents_.size();
    if (n == 0) fail("tree {}: empty parent line (a tree has at least one vertex)", t);
    for (size_t v = 0; v < n; ++v) {
      const int32_t p = parents_[v];
      if (v + 1 == n) {
        if (p != -1) fail("tree {}: the last vertex must be the root (parent -1), got parent {}", t, p);
      } else if (p == -1) {
        fail("tree {}: vertex {} has parent -1 but only the last vertex may be the root", t, v);
      } else if (p <= static_cast<int32_t>(v) || p >= static_cast<int32_t>(n)) {
        fail("tree {}: vertex {} has parent {}; parents must come after their children, within [{}, {})", t, v, p,
             v + 1, n);
      }
    }
    read_ints(next_line(fmt::format("tree {}'s token line", t)), tokens_, "token");
    check_line(t, tokens_, "token", w.vocabulary_size, "vocabulary");
    read_ints(next_line(fmt::format("tree {}'s label line", t)), labels_, "label");
    check_line(t, labels_, "label", w.num_classes, "classes");

    // Children of each vertex in increasing id order, as compressed lists.
    offsets_.assign(n + 1, 0);
    for (size_t v = 0; v + 1 < n; ++v) ++offsets_[static_cast<size_t>(parents_[v]) + 1];
    for (size_t v = 0; v < n; ++v) offsets_[v + 1] += offsets_[v];
    children_.resize(n > 0 ? n - 1 : 0);
    fill_.assign(offsets_.begin(), offsets_.end() - 1);
    for (size_t v = 0; v + 1 < n; ++v) children_[static_cast<size_t>(fill_[parents_[v]]++)] = static_cast<int32_t>(v);
    InputGraph g;
    g.reserve(static_cast<int32_t>(n), static_cast<int64_t>(n) - 1);
    for (size_t v = 0; v < n; ++v) {
      const std::span<const int32_t> kids(children_.data() + offsets_[v], children_.data() + offsets_[v + 1]);
      g.add_vertex(kids, labels_[v], tokens_[v]);
    }
    return g;
  }

  void check_line(int32_t t, const std::vector<int32_t>& ids, const char* what, int32_t size, const char* key) {
    if (ids.size() != parents_.size())
      fail("tree {}: {} {}s for {} vertices (the parent line's length)", t, ids.size(), what, parents_.size());
    for (size_t v = 0; v < ids.size(); ++v)
      if (ids[v] < -1 || ids[v] >= size)
        fail("tree {}, vertex {}: {} {} is outside [-1, {}) (header '{}')", t, v, what, ids[v], size, key);
  }

  std::string_view next_line(std::string_view expected) {
    if (pos_ >= text_.size()) {
      ++line_;
      fail("unexpected end of file, expected {}", expected);
    }
    const size_t end = text_.find('\n', pos_);
    const size_t stop = end == std::string_view::npos ? text_.size() : end;
    std::string_view line = text_.substr(pos_, stop - pos_);
    pos_ = stop + 1;
    ++line_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
  }

  static std::pair<std::string_view, std::string_view> split_key(std::string_view line) {
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) return {line, {}};
    return {line.substr(0, space), line.substr(space + 1)};
  }

  std::string_view header_value(std::string_view line, std::string_view key) {
    const auto [k, v] = split_key(line);
    if (k != key) fail("expected the header line '{} ...', got '{}'", key, line);
    return v;
  }

  int32_t header_count(std::string_view line, std::string_view key) {
    const int64_t value = parse_int(header_value(line, key), key);
    if (value < 0 || value > INT32_MAX) fail("'{}' must be a count in [0, 2^31), got {}", key, value);
    return static_cast<int32_t>(value);
  }

  int64_t parse_int(std::string_view s, std::string_view what) {
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) fail("{}: '{}' is not an integer", what, s);
    return value;
  }

  void read_ints(std::string_view line, std::vector<int32_t>& out, const char* what) {
    out.clear();
    const char* p = line.data();
    const char* end = p + line.size();
    while (true) {
      while (p < end && (*p == ' ' || *p == '\t')) ++p;
      if (p == end) break;
      int32_t value = 0;
      const auto [next, ec] = std::from_chars(p, end, value);
      if (ec != std::errc() || (next < end && *next != ' ' && *next != '\t')) {
        const char* stop = p;
        while (stop < end && *stop != ' ' && *stop != '\t') ++stop;
        fail("column {}: {} '{}' is not an integer", p - line.data() + 1, what, std::string_view(p, stop - p));
      }
      out.push_back(value);
      p = next;
    }
  }

  template <class... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
    raise<DataError>("{}:{}: tree workload: {}", source_, line_, fmt::format(format, std::forward<Args>(args)...));
  }

  std::string_view text_;
  std::string_view source_;
  size_t pos_ = 0;
  int64_t line_ = 0;
  std::vector<int32_t> parents_, tokens_, labels_, offsets_, children_, fill_;
};

}  // namespace

int64_t TreeWorkload::num_vertices() const {
  int64_t n = 0;
  for (const auto& t : trees) n += t.num_vertices();
  return n;
}

void write_tree_workload(std::ostream& out, const TreeWorkload& workload) {
  require<DataError>(is_word(workload.name), "tree workload: the name must be one word, got '{}'", workload.name);
  require<DataError>(workload.vocabulary_size >= 0 && workload.num_classes >= 0,
                     "tree workload: negative vocabulary ({}) or class count ({})", workload.vocabulary_size,
                     workload.num_classes);
  fmt::memory_buffer buffer;
  auto it = std::back_inserter(buffer);
  fmt::format_to(it, "{} {}\n", tree_workload_magic, tree_workload_version);
  for (const auto& comment : workload.comments) {
    require<DataError>(comment.find('\n') == std::string::npos, "tree workload: a comment spans lines: '{}'",
                       comment);
    fmt::format_to(it, "# {}\n", comment);
  }
  fmt::format_to(it, "name {}\nvocabulary {}\nclasses {}\ntrees {}\nvertices {}\n", workload.name,
                 workload.vocabulary_size, workload.num_classes, workload.trees.size(), workload.num_vertices());
  for (size_t t = 0; t < workload.trees.size(); ++t) {
    const InputGraph& tree = workload.trees[t];
    const auto parents = parents_of(tree, t);
    check_range(tree.tokens(), workload.vocabulary_size, t, "token");
    check_range(tree.labels(), workload.num_classes, t, "label");
    append_line(buffer, parents);
    append_line(buffer, tree.tokens());
    append_line(buffer, tree.labels());
    if (buffer.size() > (1 << 20)) {
      out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      buffer.clear();
    }
  }
  out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
}

void write_tree_workload(const std::filesystem::path& path, const TreeWorkload& workload) {
  // Written to a temporary name first, so a failed write leaves no half file.
  const std::filesystem::path partial = path.string() + ".partial";
  try {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    require<DataError>(out.good(), "tree workload: cannot open '{}' for writing", partial.string());
    write_tree_workload(out, workload);
    out.flush();
    require<DataError>(out.good(), "tree workload: writing '{}' failed", partial.string());
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(partial, ignored);
    throw;
  }
  std::filesystem::rename(partial, path);
}

TreeWorkload parse_tree_workload(std::string_view text, std::string_view source) {
  return WorkloadParser(text, source).parse();
}

TreeWorkload read_tree_workload(const std::filesystem::path& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return parse_tree_workload(text, path.string());
}

}  // namespace taihu
