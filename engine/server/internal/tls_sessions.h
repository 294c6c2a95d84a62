// TlsSessions: the TLS side of the HTTP listener's connections when the API serves HTTPS
// (server.tls_cert_file). One OpenSSL server context, and one session per connection
// socket from accept (Attach) to close (Release). The listener's own connection handling
// (internal/http_listener.h: no thread for slow or idle clients, header deadlines, the
// connection cap) stays as it is: the ConnectionWaiter reads request headers through
// ReadNow (which completes the handshake first, without blocking, so a slow handshake
// costs no thread either and counts against the header deadline), and the thread serving
// a request reads and writes through the session (SocketStream with Session(sock)).
//
// A client that speaks plain HTTP to the TLS port gets a plain-text 400 naming the
// problem, and its connection is closed. Sockets with a session are non-blocking; writes
// never raise SIGPIPE. TLS 1.2 and 1.3 only; no renegotiation.
// Thread-safe; a session is used by one thread at a time (the listener hands a
// connection from thread to thread through its queues).
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/server/internal/connection_waiter.h"

namespace orca {

class TlsSessions final : public ConnectionIo {
 public:
  // Returns sessions serving `cert_pem` (the chain, server certificate first) with
  // `key_pem`. InvalidArgument when OpenSSL does not accept them (LoadTlsCredentials in
  // engine/server/tls_credentials.h checks them with file names first).
  static absl::StatusOr<std::unique_ptr<TlsSessions>> Create(const std::string& cert_pem,
                                                             const std::string& key_pem);
  ~TlsSessions() override;

  // Starts the server side of a session on `sock` (just accepted) and makes the socket
  // non-blocking. Returns false when the session cannot be created.
  bool Attach(int sock);
  // Returns the session of `sock`, null when it has none.
  SSL* Session(int sock) const;

  // ConnectionIo: see internal/connection_waiter.h. Release sends close_notify (best
  // effort) and frees the session.
  ssize_t ReadNow(int sock, char* buf, size_t size) override;
  void WriteNow(int sock, const std::string& data) override;
  void Release(int sock) override;

 private:
  TlsSessions() = default;

  SSL_CTX* ctx_ = nullptr;
  BIO_METHOD* bio_method_ = nullptr;  // sockets without SIGPIPE (send with MSG_NOSIGNAL)
  mutable absl::Mutex mu_;
  absl::flat_hash_map<int, SSL*> sessions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace orca
