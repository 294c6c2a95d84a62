#include "engine/model/pull/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace orca {
namespace {

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
struct FileClose {
  void operator()(FILE* f) const { std::fclose(f); }
};

std::string Hex(const unsigned char* d, unsigned n) {
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(d), n));
}

}  // namespace

absl::StatusOr<std::string> Sha256OfFile(const std::string& path) {
  std::unique_ptr<FILE, FileClose> f(std::fopen(path.c_str(), "rb"));
  if (!f) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return absl::InternalError("EVP_DigestInit_ex(sha256) failed");
  }
  std::vector<char> buf(1 << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) {
    EVP_DigestUpdate(ctx.get(), buf.data(), n);
  }
  if (std::ferror(f.get())) {
    return absl::InternalError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  return Hex(md, len);
}

std::string Sha256OfString(absl::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  return Hex(md, len);
}

bool IsSha256Hex(absl::string_view hex) {
  if (hex.size() != 64) return false;
  for (char c : hex)
    if (!absl::ascii_isxdigit(c)) return false;
  return true;
}

}  // namespace orca
