#pragma once
// Certificates made at run time for TLS tests (OpenSSL's X509 API): a CA, and
// node certificates it signs, as PEM files in a directory of the test's.
// EC P-256 keys, SHA-256 signatures, valid from now for a day (or as a test
// asks: an expired one), and self-signed ones that no CA vouches for.

#include <doctest/doctest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "transport/tls.hpp"

namespace taihu::testing {

// When a certificate is valid, in seconds from now: by default from a minute
// ago for a day.
struct Validity {
  long not_before = -60;
  long not_after = 24 * 3600;
};
inline constexpr Validity expired{-2 * 24 * 3600, -24 * 3600};

class CertificateAuthority {
 public:
  // A CA named `name`, its certificate written to dir/name-ca.pem.
  CertificateAuthority(std::filesystem::path dir, std::string name) : dir_(std::move(dir)), name_(std::move(name)) {
    key_.reset(EVP_EC_gen("P-256"));
    REQUIRE(key_ != nullptr);
    certificate_ = make(name_ + " CA", key_.get(), nullptr, key_.get(), true);
    ca_file_ = dir_ / (name_ + "-ca.pem");
    write_certificate(ca_file_, certificate_.get());
  }

  const std::filesystem::path& ca_file() const { return ca_file_; }

  // A node's certificate signed by this CA, and its key (mode 600), with this
  // CA's file to verify peers against.
  transport::TlsCertificates issue(const std::string& node, Validity validity = {}) {
    return write(node, [&](EVP_PKEY* key) { return make(node, key, certificate_.get(), key_.get(), false, validity); });
  }
  // A node's certificate that signs itself (no CA's), and its key, with this
  // CA's file to verify peers against.
  transport::TlsCertificates self_signed(const std::string& node) {
    return write(node, [&](EVP_PKEY* key) { return make(node, key, nullptr, key, false, {}); });
  }

 private:
  using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;

  template <class Make>
  transport::TlsCertificates write(const std::string& node, Make make_certificate) {
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), EVP_PKEY_free);
    REQUIRE(key != nullptr);
    auto certificate = make_certificate(key.get());
    const auto pem = dir_ / (name_ + "-" + node + ".pem");
    const auto key_file = dir_ / (name_ + "-" + node + ".key");
    write_certificate(pem, certificate.get());
    FILE* out = std::fopen(key_file.c_str(), "w");
    REQUIRE(out != nullptr);
    ::chmod(key_file.c_str(), 0600);
    REQUIRE(PEM_write_PrivateKey(out, key.get(), nullptr, nullptr, 0, nullptr, nullptr) == 1);
    std::fclose(out);
    return {pem.string(), key_file.string(), ca_file_.string()};
  }

  static void extend(X509* certificate, X509* issuer, int nid, const char* value) {
    X509V3_CTX context;
    X509V3_set_ctx_nodb(&context);
    X509V3_set_ctx(&context, issuer != nullptr ? issuer : certificate, certificate, nullptr, nullptr, 0);
    X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
    REQUIRE(extension != nullptr);
    REQUIRE(X509_add_ext(certificate, extension, -1) == 1);
    X509_EXTENSION_free(extension);
  }

  // A certificate for `subject_key` named `common_name`, signed by
  // `issuer_key` (self-signed when `issuer` is null).
  X509Ptr make(const std::string& common_name, EVP_PKEY* subject_key, X509* issuer, EVP_PKEY* issuer_key, bool ca,
               Validity validity = {}) {
    X509Ptr certificate(X509_new(), X509_free);
    REQUIRE(certificate != nullptr);
    X509_set_version(certificate.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(certificate.get()), ++serial_);
    X509_gmtime_adj(X509_getm_notBefore(certificate.get()), validity.not_before);
    X509_gmtime_adj(X509_getm_notAfter(certificate.get()), validity.not_after);
    REQUIRE(X509_set_pubkey(certificate.get(), subject_key) == 1);
    X509_NAME* name = X509_get_subject_name(certificate.get());
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(common_name.c_str()),
                               -1, -1, 0);
    REQUIRE(X509_set_issuer_name(certificate.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name) == 1);
    extend(certificate.get(), issuer, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
    extend(certificate.get(), issuer, NID_key_usage, ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
    extend(certificate.get(), issuer, NID_subject_key_identifier, "hash");
    if (issuer != nullptr) extend(certificate.get(), issuer, NID_authority_key_identifier, "keyid:always");
    REQUIRE(X509_sign(certificate.get(), issuer_key, EVP_sha256()) > 0);
    return certificate;
  }

  static void write_certificate(const std::filesystem::path& path, X509* certificate) {
    FILE* out = std::fopen(path.c_str(), "w");
    REQUIRE(out != nullptr);
    REQUIRE(PEM_write_X509(out, certificate) == 1);
    std::fclose(out);
  }

  std::filesystem::path dir_;
  std::string name_;
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key_{nullptr, EVP_PKEY_free};
  X509Ptr certificate_{nullptr, X509_free};
  std::filesystem::path ca_file_;
  long serial_ = 0;
};

}  // namespace taihu::testing
