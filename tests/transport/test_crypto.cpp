// The handshakes' cryptography (transport/crypto.hpp), which OpenSSL does:
// checked against the RFC 4231 (HMAC) and RFC 5869 (HKDF) vectors, so that a wrong digest name or key
// handling shows here and not as a cluster that admits no one.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <vector>

#include "transport/cluster_secret.hpp"
#include "transport/crypto.hpp"

using namespace taihu::transport;

namespace {

template <class Array>
std::string hex(const Array& d) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (const auto b : d) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

}  // namespace

TEST_SUITE("transport") {
  TEST_CASE("HMAC-SHA-256 matches RFC 4231") {
    const std::vector<std::uint8_t> key1(20, 0x0b);
    CHECK(hex(hmac_sha256(key1, bytes_of("Hi There"))) ==
          "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    CHECK(hex(hmac_sha256(bytes_of("Jefe"), bytes_of("what do ya want for nothing?"))) ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    const std::vector<std::uint8_t> key3(20, 0xaa), data3(50, 0xdd);
    CHECK(hex(hmac_sha256(key3, data3)) == "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    // Test cases 6 and 7: keys longer than SHA-256's 64-byte block are hashed first.
    const std::vector<std::uint8_t> long_key(131, 0xaa);
    CHECK(hex(hmac_sha256(long_key, bytes_of("Test Using Larger Than Block-Size Key - Hash Key First"))) ==
          "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    CHECK(hex(hmac_sha256(long_key, bytes_of("This is a test using a larger than block-size key and a larger "
                                             "than block-size data. The key needs to be hashed before being "
                                             "used by the HMAC algorithm."))) ==
          "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
  }

  TEST_CASE("HKDF-SHA-256 matches RFC 5869") {
    // Test case 1, with the info in two parts (they are concatenated).
    const std::vector<std::uint8_t> ikm(22, 0x0b), salt{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
        info1{0xf0, 0xf1, 0xf2, 0xf3}, info2{0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9};
    std::array<std::uint8_t, 42> okm{};
    hkdf_sha256(ikm, salt, {info1, info2}, okm);
    CHECK(hex(okm) == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865");
    // Test case 3: no salt, no info.
    hkdf_sha256(ikm, Bytes{}, {}, okm);
    CHECK(hex(okm) == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8");
  }

  TEST_CASE("a proof over several fields is the HMAC of their concatenation") {
    const std::string key = "cluster secret";
    const std::uint32_t version = 4;
    const std::int32_t node = -1;
    std::vector<std::uint8_t> joined;
    for (const Bytes part : {bytes_of("role"), field_bytes(version), field_bytes(node)})
      joined.insert(joined.end(), part.begin(), part.end());
    CHECK(hmac_sha256(bytes_of(key), {bytes_of("role"), field_bytes(version), field_bytes(node)}) ==
          hmac_sha256(bytes_of(key), joined));
    // Fields are not separators: the same bytes split differently give the same proof,
    // which is why every proof puts fixed-size fields after the role.
    CHECK(hmac_sha256(bytes_of(key), {bytes_of("ab"), bytes_of("c")}) ==
          hmac_sha256(bytes_of(key), {bytes_of("a"), bytes_of("bc")}));
    // An empty key is a key (HMAC pads it), not "keep the previous one".
    CHECK(hex(hmac_sha256(Bytes{}, Bytes{})) == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
  }

  TEST_CASE("comparison and random bytes") {
    const std::vector<std::uint8_t> a{1, 2, 3}, b{1, 2, 4}, c{1, 2};
    CHECK(equal_constant_time(a, a));
    CHECK_FALSE(equal_constant_time(a, b));
    CHECK_FALSE(equal_constant_time(a, c));
    CHECK(equal_constant_time(Bytes{}, Bytes{}));

    std::set<std::string> secrets;
    for (int i = 0; i < 64; ++i) {
      const std::string s = random_secret();
      CHECK(s.size() == 64);
      CHECK(s.find_first_not_of("0123456789abcdef") == std::string::npos);
      secrets.insert(s);
    }
    CHECK(secrets.size() == 64);
    std::array<std::uint8_t, 4096> bytes{};
    random_bytes(bytes);
    std::array<int, 256> counts{};
    for (const auto x : bytes) ++counts[x];
    // 16 expected per value; a stuck or short generator leaves a value far above.
    CHECK(*std::max_element(counts.begin(), counts.end()) < 48);
  }
}
