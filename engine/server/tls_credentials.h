// TlsCredentials: the certificate and private key the public APIs serve TLS with
// (server.tls_cert_file, server.tls_key_file; docs/serving.md, "TLS"). Loading checks
// everything a handshake would otherwise find out late: both files readable, the first a
// PEM certificate (a chain: the server's first, then intermediates), the second a PEM
// private key, and the key belonging to the certificate. Every error names the file and
// the setting. Plain values; thread-compatible.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace orca {

struct TlsCredentials {
  std::string cert_pem;   // the chain, server certificate first
  std::string key_pem;    // its private key
  std::string cert_file;  // where they came from, for logs
  std::string key_file;
};

// Returns the credentials in `cert_file` and `key_file`, or nullopt when both are empty
// (TLS off). InvalidArgument when only one is set, when a file is not what it should be
// or the key does not match the certificate; NotFound when a file does not exist.
absl::StatusOr<std::optional<TlsCredentials>> LoadTlsCredentials(const std::string& cert_file,
                                                                 const std::string& key_file);

}  // namespace orca
