#include "transport/crypto.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <memory>
#include <string>
#include <vector>

#include "core/common/error.hpp"

namespace taihu::transport {
namespace {

std::string openssl_error() {
  const unsigned long code = ERR_get_error();
  if (code == 0) return "no error queued";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

[[noreturn]] void fail(const char* what) { throw Error(std::string("OpenSSL: ") + what + ": " + openssl_error()); }

struct Deleter {
  void operator()(EVP_MAC* m) const { EVP_MAC_free(m); }
  void operator()(EVP_MAC_CTX* c) const { EVP_MAC_CTX_free(c); }
  void operator()(EVP_KDF* k) const { EVP_KDF_free(k); }
  void operator()(EVP_KDF_CTX* c) const { EVP_KDF_CTX_free(c); }
};

// Fetching the algorithm searches the provider tables; do it once. An EVP_MAC
// is reference-counted and may be shared between threads; contexts may not.
EVP_MAC* hmac_algorithm() {
  static const std::unique_ptr<EVP_MAC, Deleter> mac{EVP_MAC_fetch(nullptr, "HMAC", nullptr)};
  if (!mac) fail("EVP_MAC_fetch(HMAC)");
  return mac.get();
}

EVP_KDF* hkdf_algorithm() {
  static const std::unique_ptr<EVP_KDF, Deleter> kdf{EVP_KDF_fetch(nullptr, "HKDF", nullptr)};
  if (!kdf) fail("EVP_KDF_fetch(HKDF)");
  return kdf.get();
}

// OSSL_PARAM wants non-const pointers to what it only reads.
void* readable(Bytes bytes) {
  static std::uint8_t none = 0;
  return bytes.empty() ? &none : const_cast<std::uint8_t*>(bytes.data());
}

}  // namespace

Digest hmac_sha256(Bytes key, std::initializer_list<Bytes> parts) {
  const std::unique_ptr<EVP_MAC_CTX, Deleter> ctx{EVP_MAC_CTX_new(hmac_algorithm())};
  if (!ctx) fail("EVP_MAC_CTX_new");
  char digest_name[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
                               OSSL_PARAM_construct_end()};
  // A null key means "keep the previous key" to EVP_MAC_init; an empty key is
  // a valid (if useless) HMAC key, so it gets a non-null pointer.
  static const std::uint8_t no_key = 0;
  if (EVP_MAC_init(ctx.get(), key.empty() ? &no_key : key.data(), key.size(), params) != 1) fail("EVP_MAC_init");
  for (const Bytes part : parts)
    if (!part.empty() && EVP_MAC_update(ctx.get(), part.data(), part.size()) != 1) fail("EVP_MAC_update");
  Digest out{};
  std::size_t length = 0;
  if (EVP_MAC_final(ctx.get(), out.data(), &length, out.size()) != 1 || length != out.size()) fail("EVP_MAC_final");
  return out;
}

void hkdf_sha256(Bytes key, Bytes salt, std::initializer_list<Bytes> info, std::span<std::uint8_t> out) {
  const std::unique_ptr<EVP_KDF_CTX, Deleter> ctx{EVP_KDF_CTX_new(hkdf_algorithm())};
  if (!ctx) fail("EVP_KDF_CTX_new");
  std::vector<std::uint8_t> joined_info;
  for (const Bytes part : info) joined_info.insert(joined_info.end(), part.begin(), part.end());
  char digest_name[] = "SHA256";
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest_name, 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, readable(key), key.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, readable(salt), salt.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, readable(joined_info), joined_info.size()),
      OSSL_PARAM_construct_end()};
  if (EVP_KDF_derive(ctx.get(), out.data(), out.size(), params) != 1) fail("EVP_KDF_derive(HKDF)");
}

bool equal_constant_time(Bytes a, Bytes b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void random_bytes(std::span<std::uint8_t> out) {
  if (out.empty()) return;
  if (RAND_bytes(out.data(), static_cast<int>(out.size())) != 1) fail("RAND_bytes");
}

}  // namespace taihu::transport
