#include "core/graph/vocabulary.hpp"

#include <algorithm>

#include "core/common/check.hpp"

namespace taihu {

Vocabulary::Vocabulary() { append(std::string(unknown_token)); }

Vocabulary::Vocabulary(const std::vector<std::string>& tokens) : Vocabulary() {
  for (const auto& token : tokens) {
    if (token == unknown_token) continue;
    require<DataError>(!contains(token), "vocabulary: token '{}' is listed twice", token);
    append(token);
  }
}

void Vocabulary::append(std::string token) {
  const auto id = static_cast<int32_t>(tokens_.size());
  ids_.emplace(token, id);
  tokens_.push_back(std::move(token));
}

int32_t Vocabulary::id(std::string_view token) const {
  const auto it = ids_.find(token);
  return it == ids_.end() ? unknown_id : it->second;
}

bool Vocabulary::contains(std::string_view token) const { return ids_.find(token) != ids_.end(); }

int32_t VocabularyBuilder::add(std::string_view token, int64_t count) {
  auto it = index_.find(token);
  if (it == index_.end()) {
    it = index_.emplace(std::string(token), static_cast<int32_t>(entries_.size())).first;
    entries_.push_back(&it->first);
    counts_.push_back(0);
  }
  counts_[static_cast<size_t>(it->second)] += count;
  return it->second;
}

int64_t VocabularyBuilder::count(std::string_view token) const {
  const auto it = index_.find(token);
  return it == index_.end() ? 0 : counts_[static_cast<size_t>(it->second)];
}

Vocabulary VocabularyBuilder::build(const VocabularyOptions& options) const {
  require<ConfigError>(options.min_count >= 1, "vocabulary: min_count must be >= 1, got {}", options.min_count);
  require<ConfigError>(options.max_size >= 0, "vocabulary: max_size must be >= 0, got {}", options.max_size);
  std::vector<std::pair<const std::string*, int64_t>> kept;
  kept.reserve(counts_.size());
  for (size_t i = 0; i < entries_.size(); ++i)
    if (counts_[i] >= options.min_count && *entries_[i] != Vocabulary::unknown_token)
      kept.emplace_back(entries_[i], counts_[i]);
  std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : *a.first < *b.first;
  });
  if (options.max_size > 0 && static_cast<int64_t>(kept.size()) > options.max_size - 1)
    kept.resize(static_cast<size_t>(std::max<int64_t>(options.max_size - 1, 0)));
  std::vector<std::string> tokens;
  tokens.reserve(kept.size());
  for (const auto& entry : kept) tokens.push_back(*entry.first);
  return Vocabulary(tokens);
}

}  // namespace taihu
