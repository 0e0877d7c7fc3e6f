#pragma once
// taihu's config format: INI-like, line oriented, every value remembers the
// file and line it came from so that errors can point at it.
//
//   # comment (also ';'); a '#' after whitespace starts a trailing comment
//   epochs = 3            # keys before any header belong to the root section
//   [solver]              # a section: kind "solver", no name
//   base_lr = 0.01
//   [layer conv1]         # a named section: kind "layer", name "conv1"
//   kernel_size = 5
//   bottom = data label   # lists are separated by spaces or commas
//
// Sections track which keys were read; a key nobody read is reported as an
// unknown option (with its location) by Section::reject_unused().

#include <charconv>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/common/error.hpp"
#include "core/common/excerpt.hpp"

namespace taihu::config {

struct Location {
  std::string file;
  int line = 0;
  std::string str() const;
};

struct Entry {
  std::string key;
  std::string value;
  Location where;
  mutable bool used = false;
};

// Converts the text of a value; returns nullopt if it does not parse.
template <class T>
std::optional<T> parse_value(std::string_view text);

class Section {
 public:
  Section(std::string kind, std::string name, Location where)
      : kind_(std::move(kind)), name_(std::move(name)), where_(std::move(where)) {}

  const std::string& kind() const { return kind_; }
  const std::string& name() const { return name_; }
  const Location& where() const { return where_; }
  // "[layer conv1]", "[solver]" or "top level", for messages (a long name
  // shortened: core/common/excerpt.hpp).
  std::string title() const;
  const std::vector<Entry>& entries() const { return entries_; }

  bool has(std::string_view key) const { return find(key) != nullptr; }
  const Entry* find(std::string_view key) const;

  // A required value; throws ConfigError naming the section if absent.
  template <class T>
  T get(std::string_view key) const;
  template <class T>
  T get_or(std::string_view key, T fallback) const;
  template <class T>
  std::vector<T> get_list(std::string_view key) const;
  template <class T>
  std::vector<T> get_list_or(std::string_view key, std::vector<T> fallback) const;
  // A string value that must be one of `choices`.
  std::string get_choice(std::string_view key, std::initializer_list<std::string_view> choices,
                         std::string_view fallback) const;

  // Sets or replaces a value (later assignments and overrides win).
  void set(std::string key, std::string value, Location where);
  void mark_all_used() const;
  // Throws ConfigError for the first key that no one read: "unknown option".
  void reject_unused(std::string_view context = {}) const;

  // A ConfigError "file:line: key 'k' in [section]: message".
  ConfigError error(std::string_view key, std::string_view message) const;
  ConfigError error(const Entry& entry, std::string_view message) const;

 private:
  template <class T>
  T convert(const Entry& entry, std::string_view text) const;

  std::string kind_;
  std::string name_;
  Location where_;
  std::vector<Entry> entries_;
};

class Document {
 public:
  Document();
  static Document parse_file(const std::filesystem::path& path);
  static Document parse(std::string_view text, std::string source_name);

  Section& root() { return sections_.front(); }
  const Section& root() const { return sections_.front(); }
  // The first section of this kind (and name), or nullptr.
  const Section* find(std::string_view kind, std::string_view name = {}) const;
  Section* find(std::string_view kind, std::string_view name = {});
  // Like find, but a missing section reads as empty.
  const Section& section(std::string_view kind, std::string_view name = {}) const;
  Section& section_or_add(std::string_view kind, std::string_view name = {});
  std::vector<const Section*> sections(std::string_view kind) const;
  const std::vector<Section>& all() const { return sections_; }

  // Applies "key=value" or "section.key=value" or "kind.name.key=value"
  // (as given on a command line, with or without leading dashes).
  void apply_override(std::string_view assignment);
  // The merged config, in this format, parseable again.
  std::string dump() const;

  // The file this document was read from (empty for strings).
  const std::filesystem::path& path() const { return path_; }
  // Resolves a path written in this document: relative to its file's folder.
  std::filesystem::path resolve(const std::filesystem::path& relative) const;

  // Throws for keys never read, in every section (call after consuming).
  void reject_unused() const;

 private:
  std::filesystem::path path_;
  std::vector<Section> sections_;
};

// The keys of a net description that an application config gives, in its
// file or on the command line (`layer.conv1.num_output=32`, `net.fuse=false`):
// its sections [net], [input NAME] and [layer NAME], applied over `net`, the
// description its root key `net` names. Each key keeps where it was given, so
// a key the layer does not read is an unknown option there; an [input] or
// [layer] that `net` lacks is a ConfigError naming where it was given. Marks
// those sections of `app` used.
void apply_net_overrides(const Document& app, Document& net);

// ---------------------------------------------------------------- internals

std::vector<std::string_view> split_list(std::string_view text);

template <class T>
std::optional<T> parse_value(std::string_view text) {
  if constexpr (std::is_same_v<T, std::string>) {
    return std::string(text);
  } else if constexpr (std::is_same_v<T, std::filesystem::path>) {
    return std::filesystem::path(std::string(text));
  } else if constexpr (std::is_same_v<T, bool>) {
    if (text == "true" || text == "yes" || text == "on" || text == "1") return true;
    if (text == "false" || text == "no" || text == "off" || text == "0") return false;
    return std::nullopt;
  } else {
    static_assert(std::is_arithmetic_v<T>, "unsupported config value type");
    T value{};
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
    return value;
  }
}

std::string describe_type(const std::type_info& type);

template <class T>
T Section::convert(const Entry& entry, std::string_view text) const {
  if (auto value = parse_value<T>(text)) return *value;
  throw error(entry, "expected " + describe_type(typeid(T)) + ", got '" + excerpt(text) + "'");
}

template <class T>
T Section::get(std::string_view key) const {
  const Entry* entry = find(key);
  if (entry == nullptr) throw error(key, "required but missing");
  entry->used = true;
  return convert<T>(*entry, entry->value);
}

template <class T>
T Section::get_or(std::string_view key, T fallback) const {
  if (!has(key)) return fallback;
  return get<T>(key);
}

template <class T>
std::vector<T> Section::get_list(std::string_view key) const {
  const Entry* entry = find(key);
  if (entry == nullptr) throw error(key, "required but missing");
  entry->used = true;
  std::vector<T> out;
  for (auto item : split_list(entry->value)) out.push_back(convert<T>(*entry, item));
  return out;
}

template <class T>
std::vector<T> Section::get_list_or(std::string_view key, std::vector<T> fallback) const {
  if (!has(key)) return fallback;
  return get_list<T>(key);
}

}  // namespace taihu::config
