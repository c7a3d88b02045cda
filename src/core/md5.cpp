#include "ringtrain/core/md5.hpp"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "ringtrain/core/error.hpp"

namespace ringtrain {

std::string md5_file(const std::string& path) {
  const std::string what = str_cat("md5: ", path, ": ");
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  RT_CHECK(file, what, "cannot be read: ", std::strerror(errno));
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  RT_CHECK(context && EVP_DigestInit_ex(context.get(), EVP_md5(), nullptr) == 1, what,
           "EVP_DigestInit_ex(MD5) failed");
  std::vector<unsigned char> buffer(1 << 20);
  for (;;) {
    const size_t got = std::fread(buffer.data(), 1, buffer.size(), file.get());
    RT_CHECK(!std::ferror(file.get()), what, "read failed: ", std::strerror(errno));
    RT_CHECK(EVP_DigestUpdate(context.get(), buffer.data(), got) == 1, what,
             "EVP_DigestUpdate failed");
    if (got < buffer.size()) break;
  }
  RT_CHECK(std::fclose(file.release()) == 0, what, "close failed: ", std::strerror(errno));
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  RT_CHECK(EVP_DigestFinal_ex(context.get(), digest, &length) == 1, what,
           "EVP_DigestFinal_ex failed");
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    char pair[3];
    std::snprintf(pair, sizeof pair, "%02x", digest[i]);
    hex += pair;
  }
  return hex;
}

}  // namespace ringtrain
