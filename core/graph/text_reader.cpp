#include "core/graph/text_reader.hpp"

#include <string>

#include "core/data/file_bytes.hpp"

namespace taihu {
namespace {

bool separates(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Calls f(token) for each token of each non-blank line, then end_line().
template <class Token, class EndLine>
void scan(std::string_view text, Token&& token, EndLine&& end_line) {
  size_t pos = 0;
  bool line_has_tokens = false;
  while (pos < text.size()) {
    const char c = text[pos];
    if (c == '\n') {
      if (line_has_tokens) end_line();
      line_has_tokens = false;
      ++pos;
    } else if (separates(c)) {
      ++pos;
    } else {
      size_t end = pos;
      while (end < text.size() && text[end] != '\n' && !separates(text[end])) ++end;
      token(text.substr(pos, end - pos));
      line_has_tokens = true;
      pos = end;
    }
  }
  if (line_has_tokens) end_line();
}

TextCorpus map_text(std::string_view text, Vocabulary vocabulary) {
  TextCorpus corpus;
  corpus.vocabulary = std::move(vocabulary);
  const int32_t eos = corpus.vocabulary.id(end_of_sentence_token);
  std::vector<int32_t> sentence;
  scan(
      text, [&](std::string_view token) { sentence.push_back(corpus.vocabulary.id(token)); },
      [&] {
        sentence.push_back(eos);
        corpus.sentences.push_back(sentence);
        sentence.clear();
      });
  return corpus;
}

std::string read_all(const std::filesystem::path& path) {
  const auto bytes = read_file_bytes(path);
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace

int64_t TextCorpus::num_tokens() const {
  int64_t n = 0;
  for (const auto& s : sentences) n += static_cast<int64_t>(s.size());
  return n;
}

std::vector<int32_t> TextCorpus::flattened() const {
  std::vector<int32_t> stream;
  stream.reserve(static_cast<size_t>(num_tokens()));
  for (const auto& s : sentences) stream.insert(stream.end(), s.begin(), s.end());
  return stream;
}

TextCorpus parse_text(std::string_view text, const VocabularyOptions& options) {
  // One scan: tokens first hold their builder entry, remapped to ids once
  // every count is known.
  VocabularyBuilder builder;
  const int32_t eos_entry = builder.add(end_of_sentence_token, 0);
  TextCorpus corpus;
  std::vector<int32_t> sentence;
  scan(
      text, [&](std::string_view token) { sentence.push_back(builder.add(token)); },
      [&] {
        sentence.push_back(eos_entry);
        corpus.sentences.push_back(sentence);
        sentence.clear();
      });
  // <eos> survives any min_count / max_size: it ends every sentence.
  builder.add(end_of_sentence_token, static_cast<int64_t>(corpus.sentences.size()) + (int64_t{1} << 50));
  corpus.vocabulary = builder.build(options);
  std::vector<int32_t> entry_ids(static_cast<size_t>(builder.distinct()));
  for (size_t e = 0; e < entry_ids.size(); ++e)
    entry_ids[e] = corpus.vocabulary.id(builder.entry_token(static_cast<int32_t>(e)));
  for (auto& s : corpus.sentences)
    for (auto& token : s) token = entry_ids[static_cast<size_t>(token)];
  return corpus;
}

TextCorpus parse_text(std::string_view text, const Vocabulary& vocabulary) { return map_text(text, vocabulary); }

TextCorpus read_text_corpus(const std::filesystem::path& path, const VocabularyOptions& options) {
  return parse_text(read_all(path), options);
}

TextCorpus read_text_corpus(const std::filesystem::path& path, const Vocabulary& vocabulary) {
  return parse_text(read_all(path), vocabulary);
}

}  // namespace taihu
