// The net builder: a net description builds or is an Error naming the layer
// (bad shapes, unknown types, missing blobs), and a built net runs a forward
// and backward pass on zeros without a crash.
#include <memory>

#include "core/config/config.hpp"
#include "core/net/net.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taihu;
  const auto text = taihu::fuzz::text_of(data, size);
  // Descriptions with a number above 64 are skipped: a net that asks for
  // gigabytes is legitimate input, and running it would only measure malloc.
  if (!taihu::fuzz::small_numbers_only(text, 64)) return -1;  // not added to the corpus
  taihu::fuzz::expect_clean([&] {
    auto doc = std::make_shared<config::Document>(config::Document::parse(text, "fuzz-net.ini"));
    Net net(doc, 2, 1);
    net.set_phase(Phase::train);
    net.zero_param_diffs();
    net.forward_backward();
    net.set_phase(Phase::test);
    net.forward();
  });
  return 0;
}
