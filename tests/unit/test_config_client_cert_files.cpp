// Reading certificates, CA bundles and client keys: what the Redis TLS probe is given, and what
// is checked at load for libpq.
#include "dbcheck_catch.hpp"
#include "temp_dir.hpp"

#include <config/client_cert_files.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <string>

using namespace dbcheck::config;
using dbcheck::testing::TempDir;

namespace {
const std::string k_cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const std::string k_key = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";
} // namespace

TEST_CASE("a certificate is read whole, through a symbolic link too", "[config][tls]") {
  TempDir d;
  const std::string file = d.write("ca.pem", k_cert, 0644);
  const std::string link = d.path + "/current.pem";
  REQUIRE(::symlink(file.c_str(), link.c_str()) == 0);
  CHECK(read_certificate_file(file, "CA bundle") == k_cert);
  CHECK(read_certificate_file(link, "CA bundle") == k_cert);
  CHECK_FALSE(certificate_file_problem(file, "CA bundle"));
}

TEST_CASE("a certificate path that is relative, missing, a FIFO or huge is refused by name",
          "[config][tls]") {
  TempDir d;
  CHECK(read_certificate_file("ca.pem", "CA bundle").error() ==
        "CA bundle \"ca.pem\" is not an absolute path");
  CHECK_THAT(read_certificate_file(d.path + "/none.pem", "CA bundle").error(),
             dbcheck_test::StartsWith("cannot read CA bundle " + d.path + "/none.pem: "));
  const std::string fifo = d.path + "/fifo.pem";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK(read_certificate_file(fifo, "client certificate").error() ==
        "client certificate " + fifo + " is not a regular file");
  const std::string big = d.write("big.pem", std::string(k_max_certificate_file + 1, 'x'), 0644);
  CHECK_THAT(read_certificate_file(big, "CA bundle").error(),
             dbcheck_test::Contains("is larger than 1048576 bytes"));
}

TEST_CASE("a certificate file holding a key others may read is refused", "[config][tls]") {
  TempDir d;
  const std::string open = d.write("both.pem", k_cert + k_key, 0644);
  CHECK_THAT(read_certificate_file(open, "client certificate").error(),
             dbcheck_test::Contains("holds a private key and other accounts may read it"));
  const std::string closed = d.write("both-600.pem", k_cert + k_key, 0600);
  CHECK(read_certificate_file(closed, "client certificate").has_value());
}

TEST_CASE("a client key is read under the password-file rules, unencrypted PEM only",
          "[config][tls]") {
  TempDir d;
  const std::string good = d.write("client.key", k_key, 0600);
  const auto key = read_key_file(good);
  REQUIRE(key);
  CHECK(key->reveal() == k_key);
  CHECK_THAT(read_key_file(d.write("loose.key", k_key, 0644)).error(),
             dbcheck_test::Contains("loose.key"));
  CHECK_THAT(read_key_file(d.write("cert.key", k_cert, 0600)).error(),
             dbcheck_test::Contains("is not a PEM private key"));
  const std::string encrypted =
      "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIE\n-----END ENCRYPTED PRIVATE KEY-----\n";
  CHECK_THAT(read_key_file(d.write("enc.key", encrypted, 0600)).error(),
             dbcheck_test::Contains("is encrypted; dbcheck gives the TLS library no passphrase"));
  CHECK(key_file_problem(good) == std::nullopt);
}
