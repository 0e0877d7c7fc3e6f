// The CIFAR-10 reader: a batch file of any length and content is read or is
// a DataError (truncated record, label above 9).
#include "core/data/cifar10.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taihu;
  static const taihu::fuzz::Scratch scratch;
  for (const auto& name : cifar10_files(Split::test)) scratch.write(name, taihu::fuzz::text_of(data, size));
  taihu::fuzz::expect_clean([&] { (void)load_cifar10(scratch.dir(), Split::test, Preprocess{}); });
  return 0;
}
