#pragma once
// Token -> id maps for text and tree data. Id 0 is always `<unk>`; a
// vocabulary is built once from training data (VocabularyBuilder) and is then
// frozen: unknown tokens in dev/test map to `<unk>`.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace taihu {

struct VocabularyOptions {
  int64_t min_count = 1;  // tokens seen fewer times become <unk>
  int64_t max_size = 0;   // including <unk>; 0 = no limit (most frequent kept)
};

class Vocabulary {
 public:
  static constexpr int32_t unknown_id = 0;
  static constexpr std::string_view unknown_token = "<unk>";

  Vocabulary();
  // Ids in the given order after <unk> (a listed "<unk>" is skipped).
  explicit Vocabulary(const std::vector<std::string>& tokens);

  // The token's id, or unknown_id.
  int32_t id(std::string_view token) const;
  bool contains(std::string_view token) const;
  const std::string& token(int32_t id) const { return tokens_.at(static_cast<size_t>(id)); }
  int32_t size() const { return static_cast<int32_t>(tokens_.size()); }
  const std::vector<std::string>& tokens() const { return tokens_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  void append(std::string token);

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> ids_;
};

// Counts tokens, then builds a Vocabulary ordered by descending count (ties by
// byte order, so the result does not depend on hash order).
class VocabularyBuilder {
 public:
  VocabularyBuilder() = default;
  // Entries point at the map's keys: moving keeps them valid, copying would not.
  VocabularyBuilder(const VocabularyBuilder&) = delete;
  VocabularyBuilder& operator=(const VocabularyBuilder&) = delete;
  VocabularyBuilder(VocabularyBuilder&&) = default;
  VocabularyBuilder& operator=(VocabularyBuilder&&) = default;

  // Returns the token's entry: its index in first-seen order, so a reader can
  // remember entries and map them to ids once (see entry_token) instead of
  // hashing every token twice.
  int32_t add(std::string_view token, int64_t count = 1);
  int64_t count(std::string_view token) const;
  int64_t distinct() const { return static_cast<int64_t>(counts_.size()); }
  const std::string& entry_token(int32_t entry) const { return *entries_[static_cast<size_t>(entry)]; }
  Vocabulary build(const VocabularyOptions& options = {}) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> index_;
  std::vector<const std::string*> entries_;  // keys of index_, whose addresses are stable
  std::vector<int64_t> counts_;
};

}  // namespace taihu
