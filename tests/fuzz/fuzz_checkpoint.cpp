// The checkpoint loaders: the framing (magic, length, checksum) of a file,
// and, behind it, the payload itself (the fuzzer cannot forge checksums, so
// half of the inputs go straight to the decoder, as a file with a colliding
// checksum would): a checkpoint loads whole or is an Error naming it.
#include "core/train/checkpoint.hpp"
#include "core/train/compressor_checkpoint.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taihu;
  if (size == 0) return 0;
  static const taihu::fuzz::Scratch scratch;
  const std::string rest(taihu::fuzz::text_of(data + 1, size - 1));
  switch (data[0] % 4) {
    case 0:
      taihu::fuzz::expect_clean([&] { (void)load_checkpoint(scratch.write("model.ckpt", rest)); });
      break;
    case 1:
      taihu::fuzz::expect_clean([&] { (void)decode_checkpoint(rest, "fuzz.ckpt"); });
      break;
    case 2:
      taihu::fuzz::expect_clean([&] { (void)decode_compressor_checkpoint(rest, "fuzz.ckpt.compress-0"); });
      break;
    default:
      taihu::fuzz::expect_clean([&] { (void)decode_states(rest); });
  }
  return 0;
}
