#include "engine/server/tls_credentials.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"

namespace orca {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

// Returns OpenSSL's last error as text ("" when none) and clears the queue.
std::string OpenSslError() {
  const unsigned long e = ERR_peek_last_error();
  ERR_clear_error();
  if (e == 0) return "";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

std::unique_ptr<BIO, BioFree> MemoryBio(const std::string& data) {
  return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

absl::StatusOr<std::string> ReadSetting(const std::string& path, const char* setting) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(), absl::StrCat(setting, ": ", text.status().message()));
  }
  return text;
}

}  // namespace

absl::StatusOr<std::optional<TlsCredentials>> LoadTlsCredentials(const std::string& cert_file,
                                                                 const std::string& key_file) {
  if (cert_file.empty() && key_file.empty()) return std::nullopt;
  if (cert_file.empty() || key_file.empty()) {
    return absl::InvalidArgumentError(
        "server.tls_cert_file (--tls-cert-file) and server.tls_key_file (--tls-key-file) go "
        "together: set both for TLS, or neither");
  }
  TlsCredentials c;
  c.cert_file = cert_file;
  c.key_file = key_file;
  ORCA_ASSIGN_OR_RETURN(c.cert_pem, ReadSetting(cert_file, "server.tls_cert_file"));
  ORCA_ASSIGN_OR_RETURN(c.key_pem, ReadSetting(key_file, "server.tls_key_file"));

  ERR_clear_error();
  auto cert_bio = MemoryBio(c.cert_pem);
  std::unique_ptr<X509, X509Free> cert(
      cert_bio ? PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (cert == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "server.tls_cert_file: ", cert_file,
        " holds no PEM certificate (expected '-----BEGIN CERTIFICATE-----'): ", OpenSslError()));
  }
  // The rest of the chain must parse too: a broken intermediate fails every handshake.
  for (int i = 2;; ++i) {
    std::unique_ptr<X509, X509Free> next(
        PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
    if (next != nullptr) continue;
    const unsigned long e = ERR_peek_last_error();
    if (ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE) break;
    return absl::InvalidArgumentError(
        absl::StrCat("server.tls_cert_file: ", cert_file, ": certificate ", i,
                     " of the chain does not parse: ", OpenSslError()));
  }
  ERR_clear_error();
  auto key_bio = MemoryBio(c.key_pem);
  // A null password callback with an encrypted key would prompt on the terminal.
  auto no_password = [](char*, int, int, void*) { return 0; };
  std::unique_ptr<EVP_PKEY, PkeyFree> key(
      key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, no_password, nullptr) : nullptr);
  if (key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "server.tls_key_file: ", key_file,
        " holds no unencrypted PEM private key (expected '-----BEGIN PRIVATE KEY-----' or "
        "'-----BEGIN RSA/EC PRIVATE KEY-----'): ",
        OpenSslError()));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(
        "server.tls_key_file: the private key in ", key_file,
        " does not belong to the certificate in ", cert_file, " (server.tls_cert_file)"));
  }
  return c;
}

}  // namespace orca
