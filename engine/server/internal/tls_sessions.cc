#include "engine/server/internal/tls_sessions.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace orca {
namespace {

// The answer to a plain HTTP request on the TLS port (as nginx gives one), in plain text.
constexpr char kPlainHttpBody[] =
    R"({"error":{"message":"This port serves HTTPS only (server.tls_cert_file): use https://.",)"
    R"("type":"invalid_request_error","param":null,"code":null}})";

int SocketOf(BIO* b) { return static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(b))); }

// A socket BIO whose writes use send(MSG_NOSIGNAL): OpenSSL's own uses write(), which
// raises SIGPIPE (and kills the process) when the client has gone away.
int BioWrite(BIO* b, const char* data, int size) {
  BIO_clear_retry_flags(b);
  ssize_t n;
  do {
    n = ::send(SocketOf(b), data, static_cast<size_t>(size), MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_write(b);
  return static_cast<int>(n);
}

int BioRead(BIO* b, char* data, int size) {
  BIO_clear_retry_flags(b);
  ssize_t n;
  do {
    n = ::recv(SocketOf(b), data, static_cast<size_t>(size), 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_read(b);
  return static_cast<int>(n);
}

long BioCtrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

int BioCreate(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

// Offers HTTP/1.1 to a client that negotiates ALPN; without it in the client's list the
// handshake goes on without ALPN.
int SelectAlpn(SSL*, const unsigned char** out, unsigned char* out_len, const unsigned char* in,
               unsigned int in_len, void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, out_len, kHttp11, sizeof(kHttp11), in, in_len) ==
      OPENSSL_NPN_NEGOTIATED) {
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

std::string OpenSslError() {
  const unsigned long e = ERR_peek_last_error();
  ERR_clear_error();
  if (e == 0) return "unknown error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

// Answers a plain HTTP request 400, in plain text, drops what the client sent, and
// half-closes: the client reads the answer rather than a reset.
void AnswerPlainHttp(int sock) {
  const std::string response = absl::StrCat(
      "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: close\r\n"
      "Content-Length: ",
      sizeof(kPlainHttpBody) - 1, "\r\n\r\n", kPlainHttpBody);
  char drop[4096];
  while (::recv(sock, drop, sizeof(drop), MSG_DONTWAIT) > 0) {
  }
  (void)!::send(sock, response.data(), response.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(sock, SHUT_WR);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TlsSessions>> TlsSessions::Create(const std::string& cert_pem,
                                                                 const std::string& key_pem) {
  auto t = std::unique_ptr<TlsSessions>(new TlsSessions());
  ERR_clear_error();
  t->ctx_ = SSL_CTX_new(TLS_server_method());
  t->bio_method_ = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "orca socket");
  if (t->ctx_ == nullptr || t->bio_method_ == nullptr) {
    return absl::InternalError(absl::StrCat("TLS: cannot set up OpenSSL: ", OpenSslError()));
  }
  BIO_meth_set_write(t->bio_method_, BioWrite);
  BIO_meth_set_read(t->bio_method_, BioRead);
  BIO_meth_set_ctrl(t->bio_method_, BioCtrl);
  BIO_meth_set_create(t->bio_method_, BioCreate);

  SSL_CTX* ctx = t->ctx_;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Partial writes as send(2) has them; buffers freed while a connection idles.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_alpn_select_cb(ctx, SelectAlpn, nullptr);

  BIO* cert_bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = cert_bio ? PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr) : nullptr;
  const bool cert_ok = cert != nullptr && SSL_CTX_use_certificate(ctx, cert) == 1;
  X509_free(cert);
  bool chain_ok = cert_ok;
  while (chain_ok) {
    X509* next = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
    if (next == nullptr) break;
    chain_ok = SSL_CTX_add0_chain_cert(ctx, next) == 1;  // takes `next`
    if (!chain_ok) X509_free(next);
  }
  BIO_free(cert_bio);
  if (!chain_ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS: the certificate chain is not usable: ", OpenSslError()));
  }
  ERR_clear_error();  // the end of the chain reads as "no start line"
  BIO* key_bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  auto no_password = [](char*, int, int, void*) { return 0; };
  EVP_PKEY* key =
      key_bio ? PEM_read_bio_PrivateKey(key_bio, nullptr, no_password, nullptr) : nullptr;
  BIO_free(key_bio);
  const bool key_ok = key != nullptr && SSL_CTX_use_PrivateKey(ctx, key) == 1 &&
                      SSL_CTX_check_private_key(ctx) == 1;
  EVP_PKEY_free(key);
  if (!key_ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS: the private key is not usable with the certificate: ", OpenSslError()));
  }
  return t;
}

TlsSessions::~TlsSessions() {
  {
    absl::MutexLock lock(&mu_);
    for (auto& [sock, ssl] : sessions_) SSL_free(ssl);
    sessions_.clear();
  }
  SSL_CTX_free(ctx_);
  BIO_meth_free(bio_method_);
}

bool TlsSessions::Attach(int sock) {
  const int flags = ::fcntl(sock, F_GETFL, 0);
  if (flags < 0 || ::fcntl(sock, F_SETFL, flags | O_NONBLOCK) != 0) return false;
  SSL* ssl = SSL_new(ctx_);
  BIO* bio = ssl != nullptr ? BIO_new(bio_method_) : nullptr;
  if (bio == nullptr) {
    SSL_free(ssl);
    ERR_clear_error();
    return false;
  }
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(sock)));
  SSL_set_bio(ssl, bio, bio);  // the session owns the BIO
  SSL_set_accept_state(ssl);
  absl::MutexLock lock(&mu_);
  SSL*& slot = sessions_[sock];
  if (slot != nullptr) SSL_free(slot);  // a socket number reused without Release
  slot = ssl;
  return true;
}

SSL* TlsSessions::Session(int sock) const {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(sock);
  return it == sessions_.end() ? nullptr : it->second;
}

ssize_t TlsSessions::ReadNow(int sock, char* buf, size_t size) {
  SSL* ssl = Session(sock);
  if (ssl == nullptr) {
    errno = EBADF;
    return -1;
  }
  ERR_clear_error();
  auto fail = [ssl](int r) -> ssize_t {
    const int err = SSL_get_error(ssl, r);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      errno = EAGAIN;
      return -1;
    }
    ERR_clear_error();
    // close_notify, or the TCP connection ended without one.
    if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && r == 0)) return 0;
    errno = ECONNRESET;
    return -1;
  };
  if (!SSL_is_init_finished(ssl)) {
    const int r = SSL_accept(ssl);
    if (r != 1) {
      const unsigned long e = ERR_peek_error();
      if (ERR_GET_LIB(e) == ERR_LIB_SSL && ERR_GET_REASON(e) == SSL_R_HTTP_REQUEST) {
        ERR_clear_error();
        AnswerPlainHttp(sock);
        errno = ECONNRESET;
        return -1;
      }
      return fail(r);
    }
  }
  const int n = SSL_read(ssl, buf, static_cast<int>(std::min<size_t>(size, 1 << 30)));
  return n > 0 ? n : fail(n);
}

void TlsSessions::WriteNow(int sock, const std::string& data) {
  SSL* ssl = Session(sock);
  if (ssl == nullptr || !SSL_is_init_finished(ssl)) return;
  ERR_clear_error();
  (void)SSL_write(ssl, data.data(), static_cast<int>(data.size()));
  ERR_clear_error();
}

void TlsSessions::Release(int sock) {
  SSL* ssl = nullptr;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(sock);
    if (it == sessions_.end()) return;
    ssl = it->second;
    sessions_.erase(it);
  }
  ERR_clear_error();
  if (SSL_is_init_finished(ssl)) (void)SSL_shutdown(ssl);  // close_notify, not waited for
  SSL_free(ssl);
  ERR_clear_error();
}

}  // namespace orca
