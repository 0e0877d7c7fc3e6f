// The PTB text reader: any bytes are a corpus (tokens split on blanks) or a
// DataError; never a crash.
#include "core/graph/text_reader.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taihu;
  taihu::fuzz::expect_clean([&] {
    const TextCorpus corpus = parse_text(taihu::fuzz::text_of(data, size), VocabularyOptions{});
    (void)corpus.flattened();
  });
  return 0;
}
