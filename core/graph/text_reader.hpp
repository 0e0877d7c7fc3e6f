#pragma once
// Reader for language-model text in the PTB (Mikolov) layout: one sentence
// per line, tokens separated by ASCII spaces. Each sentence gets a trailing
// `<eos>`. Only ' ', '\t' and '\r' separate tokens, never other Unicode
// whitespace.

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "core/graph/vocabulary.hpp"

namespace taihu {

inline constexpr std::string_view end_of_sentence_token = "<eos>";

// Sentences as token ids, each ending with the id of <eos>; blank lines are
// skipped.
struct TextCorpus {
  std::vector<std::vector<int32_t>> sentences;
  Vocabulary vocabulary;

  int64_t num_tokens() const;
  // All sentences back to back (the stream a fixed-length LM cuts up).
  std::vector<int32_t> flattened() const;
};

// Builds the vocabulary from this text (<eos> always included).
TextCorpus parse_text(std::string_view text, const VocabularyOptions& options);
// Maps through a frozen vocabulary; unknown tokens (and <eos> if it is
// missing from the vocabulary) become <unk>.
TextCorpus parse_text(std::string_view text, const Vocabulary& vocabulary);

TextCorpus read_text_corpus(const std::filesystem::path& path, const VocabularyOptions& options);
TextCorpus read_text_corpus(const std::filesystem::path& path, const Vocabulary& vocabulary);

}  // namespace taihu
