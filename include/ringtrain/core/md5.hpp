#pragma once
// MD5 of a file (OpenSSL's EVP API), to compare a download with its published checksum. Not a
// defence against tampering: the checksums published for public datasets are MD5s.
#include <string>

namespace ringtrain {

// The file's MD5 as 32 lowercase hex digits; throws an Error naming the file and the reason.
std::string md5_file(const std::string& path);

}  // namespace ringtrain
