// The IDX readers (images and labels, plain or gzipped): a file is read or
// is a DataError naming it; declared sizes never outrun the bytes.
#include "core/data/idx.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taihu;
  static const taihu::fuzz::Scratch scratch;
  const auto path = scratch.write(size > 1 && data[0] == 0x1f && data[1] == 0x8b ? "input.gz" : "input",
                                  taihu::fuzz::text_of(data, size));
  taihu::fuzz::expect_clean([&] { (void)read_idx_images(path); });
  taihu::fuzz::expect_clean([&] { (void)read_idx_labels(path); });
  return 0;
}
