#include "core/config/config.hpp"
#include "core/config/identifier.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <typeinfo>

#include "core/common/excerpt.hpp"

namespace taihu::config {

namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

// Removes a trailing comment: '#' or ';' at the start or after whitespace.
std::string_view strip_comment(std::string_view line) {
  for (size_t i = 0; i < line.size(); ++i) {
    if ((line[i] == '#' || line[i] == ';') && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t'))
      return line.substr(0, i);
  }
  return line;
}

bool valid_identifier(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '/' || c == '.'))
      return false;
  return true;
}

}  // namespace

bool is_identifier(std::string_view text) { return valid_identifier(text); }

std::string Location::str() const {
  if (line <= 0) return file.empty() ? "<unknown>" : file;
  return fmt::format("{}:{}", file, line);
}

std::vector<std::string_view> split_list(std::string_view text) {
  std::vector<std::string_view> items;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == ',')) ++i;
    const size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t' && text[i] != ',') ++i;
    if (i > start) items.push_back(text.substr(start, i - start));
  }
  return items;
}

std::string describe_type(const std::type_info& type) {
  if (type == typeid(bool)) return "true or false";
  if (type == typeid(float) || type == typeid(double)) return "a number";
  if (type == typeid(int) || type == typeid(long) || type == typeid(long long) ||
      type == typeid(short))
    return "an integer";
  if (type == typeid(unsigned) || type == typeid(unsigned long) ||
      type == typeid(unsigned long long))
    return "a non-negative integer";
  return "a value";
}

// ------------------------------------------------------------------ Section

std::string Section::title() const {
  if (kind_.empty()) return "top level";
  if (name_.empty()) return fmt::format("[{}]", excerpt(kind_));
  return fmt::format("[{} {}]", excerpt(kind_), excerpt(name_));
}

const Entry* Section::find(std::string_view key) const {
  for (const auto& entry : entries_)
    if (entry.key == key) return &entry;
  return nullptr;
}

std::string Section::get_choice(std::string_view key, std::initializer_list<std::string_view> choices,
                                std::string_view fallback) const {
  const Entry* entry = find(key);
  if (entry == nullptr) return std::string(fallback);
  entry->used = true;
  for (auto choice : choices)
    if (entry->value == choice) return entry->value;
  throw error(*entry, fmt::format("'{}' is not one of: {}", excerpt(entry->value), fmt::join(choices, ", ")));
}

void Section::set(std::string key, std::string value, Location where) {
  for (auto& entry : entries_) {
    if (entry.key == key) {
      entry.value = std::move(value);
      entry.where = std::move(where);
      return;
    }
  }
  entries_.push_back(Entry{std::move(key), std::move(value), std::move(where)});
}

void Section::mark_all_used() const {
  for (const auto& entry : entries_) entry.used = true;
}

void Section::reject_unused(std::string_view context) const {
  for (const auto& entry : entries_) {
    if (!entry.used) {
      std::string message = "unknown option";
      if (!context.empty()) message += fmt::format(" for {}", context);
      throw error(entry, message);
    }
  }
}

ConfigError Section::error(std::string_view key, std::string_view message) const {
  if (const Entry* entry = find(key)) return error(*entry, message);
  return ConfigError(fmt::format("{}: key '{}' in {}: {}", where_.str(), excerpt(key), title(), message));
}

ConfigError Section::error(const Entry& entry, std::string_view message) const {
  return ConfigError(
      fmt::format("{}: key '{}' in {}: {}", entry.where.str(), excerpt(entry.key), title(), message));
}

// ----------------------------------------------------------------- Document

Document::Document() { sections_.emplace_back("", "", Location{}); }

Document Document::parse_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("cannot open config file '{}'", path.string()));
  std::stringstream text;
  text << in.rdbuf();
  Document doc = parse(text.str(), path.string());
  doc.path_ = path;
  return doc;
}

namespace {

// Config text is text: a control character (a NUL above all) would cut the
// value short in every message and dump that shows it, so it is an error at
// its line and column. Tabs are whitespace; a CR ends a Windows line.
void require_text(std::string_view line, std::string_view where) {
  for (std::size_t i = 0; i < line.size(); ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (c == '\t' || (c == '\r' && i + 1 == line.size())) continue;
    if (c < 0x20 || c == 0x7f)
      throw ConfigError(fmt::format("{}, column {}: a control character (byte 0x{:02x}) where text belongs", where,
                                    i + 1, c));
  }
}

}  // namespace

Document Document::parse(std::string_view text, std::string source_name) {
  Document doc;
  doc.sections_.front() = Section("", "", Location{source_name, 0});
  Section* current = &doc.sections_.front();
  int line_number = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    const Location where{source_name, line_number};
    require_text(raw, where.str());
    const std::string_view line = trim(strip_comment(raw));
    if (line.empty()) {
      if (end == text.size()) break;
      continue;
    }
    if (line.front() == '[') {
      if (line.back() != ']')
        throw ConfigError(fmt::format("{}: section header '{}' lacks a closing ']'", where.str(), excerpt(line)));
      const auto parts = split_list(line.substr(1, line.size() - 2));
      if (parts.empty() || parts.size() > 2 || !valid_identifier(parts[0]) ||
          (parts.size() == 2 && !valid_identifier(parts[1])))
        throw ConfigError(fmt::format(
            "{}: malformed section header '{}' (expected [kind] or [kind name])", where.str(), excerpt(line)));
      const std::string kind(parts[0]);
      const std::string name = parts.size() == 2 ? std::string(parts[1]) : std::string();
      for (const auto& s : doc.sections_)
        if (s.kind() == kind && s.name() == name && !kind.empty())
          throw ConfigError(fmt::format("{}: section {} already defined at {}", where.str(),
                                        s.title(), s.where().str()));
      doc.sections_.emplace_back(kind, name, where);
      current = &doc.sections_.back();
    } else {
      const auto eq = line.find('=');
      if (eq == std::string_view::npos)
        throw ConfigError(fmt::format("{}: expected 'key = value', got '{}'", where.str(), excerpt(line)));
      const std::string_view key = trim(line.substr(0, eq));
      const std::string_view value = trim(line.substr(eq + 1));
      if (!valid_identifier(key))
        throw ConfigError(fmt::format("{}: invalid key '{}'", where.str(), excerpt(key)));
      if (current->find(key) != nullptr)
        throw ConfigError(fmt::format("{}: key '{}' in {} set twice (first at {})", where.str(), excerpt(key),
                                      current->title(), current->find(key)->where.str()));
      current->set(std::string(key), std::string(value), where);
    }
    if (end == text.size()) break;
  }
  return doc;
}

const Section* Document::find(std::string_view kind, std::string_view name) const {
  for (const auto& s : sections_)
    if (s.kind() == kind && s.name() == name) return &s;
  return nullptr;
}

Section* Document::find(std::string_view kind, std::string_view name) {
  for (auto& s : sections_)
    if (s.kind() == kind && s.name() == name) return &s;
  return nullptr;
}

const Section& Document::section(std::string_view kind, std::string_view name) const {
  if (const Section* s = find(kind, name)) return *s;
  static const Section empty("", "", Location{});
  return empty;
}

Section& Document::section_or_add(std::string_view kind, std::string_view name) {
  if (Section* s = find(kind, name)) return *s;
  sections_.emplace_back(std::string(kind), std::string(name), Location{"command line", 0});
  return sections_.back();
}

std::vector<const Section*> Document::sections(std::string_view kind) const {
  std::vector<const Section*> out;
  for (const auto& s : sections_)
    if (s.kind() == kind) out.push_back(&s);
  return out;
}

void Document::apply_override(std::string_view assignment) {
  while (!assignment.empty() && assignment.front() == '-') assignment.remove_prefix(1);
  require_text(assignment, "command line");
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw ConfigError(fmt::format("command line: expected key=value, got '{}'", excerpt(assignment)));
  const std::string_view path = assignment.substr(0, eq);
  const std::string value(trim(assignment.substr(eq + 1)));
  const Location where{"command line", 0};
  const auto last_dot = path.rfind('.');
  if (last_dot == std::string_view::npos) {
    root().set(std::string(path), value, where);
    return;
  }
  const std::string_view section_path = path.substr(0, last_dot);
  const std::string key(path.substr(last_dot + 1));
  const auto dot = section_path.find('.');
  const std::string_view kind = section_path.substr(0, dot);
  const std::string_view name = dot == std::string_view::npos ? std::string_view{}
                                                              : section_path.substr(dot + 1);
  if (key.empty() || kind.empty())
    throw ConfigError(fmt::format("command line: malformed key '{}'", excerpt(path)));
  section_or_add(kind, name).set(key, value, where);
}

std::string Document::dump() const {
  std::string out;
  for (const auto& s : sections_) {
    if (s.kind().empty() && s.entries().empty()) continue;
    if (!s.kind().empty()) {
      if (!out.empty()) out += '\n';
      out += s.name().empty() ? "[" + s.kind() + "]" : "[" + s.kind() + " " + s.name() + "]";  // whole, unlike title()
      out += '\n';
    }
    // A value that starts with '#' or ';' (written "key =#x") would read back
    // as a comment after "= ": it keeps the '=' against it.
    for (const auto& e : s.entries()) {
      const bool comment_like = !e.value.empty() && (e.value.front() == '#' || e.value.front() == ';');
      out += fmt::format("{} ={}{}\n", e.key, comment_like ? "" : " ", e.value);
    }
  }
  return out;
}

std::filesystem::path Document::resolve(const std::filesystem::path& relative) const {
  if (relative.is_absolute() || path_.empty()) return relative;
  return path_.parent_path() / relative;
}

void Document::reject_unused() const {
  for (const auto& s : sections_) s.reject_unused();
}

void apply_net_overrides(const Document& app, Document& net) {
  for (const Section& s : app.all()) {
    if (s.kind() != "net" && s.kind() != "input" && s.kind() != "layer") continue;
    s.mark_all_used();
    if (s.entries().empty()) continue;
    // [net] may be absent from a net file (its keys have defaults); a layer or
    // input the net lacks is a typo, not a new one.
    Section* target =
        s.kind() == "net" && s.name().empty() ? &net.section_or_add("net") : net.find(s.kind(), s.name());
    if (target == nullptr)
      throw s.error(s.entries().front(), fmt::format("the net{} has no {}",
                                                     net.path().empty() ? "" : " '" + net.path().string() + "'",
                                                     s.title()));
    for (const Entry& e : s.entries()) target->set(e.key, e.value, e.where);
  }
}

}  // namespace taihu::config
