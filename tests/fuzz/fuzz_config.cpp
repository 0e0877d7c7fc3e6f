// The INI config parser: any text parses or is a ConfigError naming the
// place; what parses dumps to text that parses again to the same dump.
#include <cstdlib>

#include "core/config/config.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taihu;
  taihu::fuzz::expect_clean([&] {
    const auto doc = config::Document::parse(taihu::fuzz::text_of(data, size), "fuzz.ini");
    const std::string dumped = doc.dump();
    const auto again = config::Document::parse(dumped, "dumped.ini");
    if (again.dump() != dumped) std::abort();  // the dump is not a fixed point
    for (const auto& section : doc.all()) {
      // Every conversion a consumer may ask for either converts or says why.
      for (const auto& entry : section.entries()) {
        const std::string& key = entry.key;
        taihu::fuzz::expect_clean([&] { (void)section.get<double>(key); });
        taihu::fuzz::expect_clean([&] { (void)section.get<int64_t>(key); });
        taihu::fuzz::expect_clean([&] { (void)section.get<bool>(key); });
        taihu::fuzz::expect_clean([&] { (void)section.get_list<int64_t>(key); });
      }
    }
  });
  return 0;
}
