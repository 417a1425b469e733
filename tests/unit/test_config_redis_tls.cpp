// The TLS keys of a Redis cluster: tls_* for the data nodes, sentinel_tls_* for the Sentinels.
#include "dbcheck_catch.hpp"
#include "temp_dir.hpp"

#include <config/load_config.hpp>

#include <string>

using namespace dbcheck::config;
using dbcheck::testing::TempDir;

namespace {

// A Redis cluster with `lines` added after master_name (line 4), and a writer backend.
tl::expected<Config, ConfigError> with(const std::string& lines) {
  return parse_config(R"([cluster.cache]
engine = "redis"
sentinels = ["10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26379"]
master_name = "mymaster"
)" + lines + R"(
[backend.redis_write]
cluster = "cache"
role = "primary"
)",
                      "dbcheck.toml");
}

std::string errors_of(const tl::expected<Config, ConfigError>& r) {
  std::string out;
  for (const auto& m : r.error().messages) {
    out += m + "\n";
  }
  return out;
}

const std::string k_key_text =
    "-----BEGIN PRIVATE KEY-----\nkey-material\n-----END PRIVATE KEY-----\n";

} // namespace

TEST_CASE("Redis TLS: the settings reach the cluster, each link its own", "[config][redis][tls]") {
  TempDir dir;
  const auto ca = dir.write("ca.pem", "-----BEGIN CERTIFICATE-----\n", 0644);
  const auto cert = dir.write("hc.pem", "-----BEGIN CERTIFICATE-----\n", 0644);
  const auto key = dir.write("hc.key", k_key_text, 0600);
  const auto r = with("tls = true\ntls_ca_cert_file = \"" + ca + "\"\ntls_cert_file = \"" + cert +
                      "\"\ntls_key_file = \"" + key +
                      "\"\ntls_server_name = \"redis.example\"\nsentinel_tls = true\n"
                      "sentinel_tls_ca_cert_file = \"" +
                      ca + "\"\nrequire_tls = true\n");
  REQUIRE(r);
  CHECK(r->unreadable.empty());
  const auto& c = std::get<RedisCluster>(r->clusters.at("cache"));
  CHECK(c.require_tls);
  CHECK(c.tls.enabled);
  CHECK(c.tls.ca_cert_file == ca);
  CHECK(c.tls.cert_file == cert);
  CHECK(c.tls.key_file == key);
  CHECK(c.tls.server_name == std::optional<std::string>{"redis.example"});
  CHECK(c.sentinel_tls.enabled);
  CHECK(c.sentinel_tls.ca_cert_file == ca);
  CHECK_FALSE(c.sentinel_tls.cert_file);
  CHECK_FALSE(c.sentinel_tls.server_name);
}

TEST_CASE("Redis TLS: plain by default, and plain is refused under require_tls",
          "[config][redis][tls]") {
  const auto plain = with("");
  REQUIRE(plain);
  const auto& c = std::get<RedisCluster>(plain->clusters.at("cache"));
  CHECK_FALSE(c.tls.enabled);
  CHECK_FALSE(c.sentinel_tls.enabled);
  CHECK_FALSE(c.require_tls);

  const auto strict = with("tls = true\nrequire_tls = true\n");
  REQUIRE_FALSE(strict);
  CHECK(errors_of(strict) ==
        "dbcheck.toml:6: cluster.cache.sentinel_tls: the links to the Sentinels are plain text: "
        "anyone on the path can pose as them and read the check's password; set sentinel_tls = "
        "true (require_tls = true)\n");
}

TEST_CASE("Redis TLS: files only with tls = true, a certificate with its key",
          "[config][redis][tls]") {
  TempDir dir;
  const auto ca = dir.write("ca.pem", "-----BEGIN CERTIFICATE-----\n", 0644);
  const auto cert = dir.write("hc.pem", "-----BEGIN CERTIFICATE-----\n", 0644);
  SECTION("a file without tls = true") {
    const auto r = with("sentinel_tls_ca_cert_file = \"" + ca + "\"\n");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r) == "dbcheck.toml:5: cluster.cache.sentinel_tls_ca_cert_file: needs "
                          "sentinel_tls = true\n");
  }
  SECTION("a certificate without its key") {
    const auto r = with("tls = true\ntls_cert_file = \"" + cert + "\"\n");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r) == "dbcheck.toml:6: cluster.cache.tls_cert_file: needs tls_cert_file and "
                          "tls_key_file together (the client certificate and its key)\n");
  }
  SECTION("not a boolean, an empty server name") {
    const auto r = with("tls = \"yes\"\nsentinel_tls = true\nsentinel_tls_server_name = \"\"\n");
    REQUIRE_FALSE(r);
    CHECK_THAT(errors_of(r), dbcheck_test::Contains("dbcheck.toml:5: cluster.cache.tls:"));
    CHECK_THAT(errors_of(r), dbcheck_test::Contains(
                                 "dbcheck.toml:7: cluster.cache.sentinel_tls_server_name: expected "
                                 "a host name or an IP address"));
  }
}

TEST_CASE("Redis TLS: a missing file or a loose key makes only this cluster unusable",
          "[config][redis][tls]") {
  TempDir dir;
  const auto cert = dir.write("hc.pem", "-----BEGIN CERTIFICATE-----\n", 0644);
  const auto loose = dir.write("loose.key", k_key_text, 0644);
  const auto r =
      with("tls = true\ntls_ca_cert_file = \"" + dir.path + "/none.pem\"\ntls_cert_file = \"" +
           cert + "\"\ntls_key_file = \"" + loose + "\"\n");
  REQUIRE(r);
  REQUIRE(r->unreadable.count("cache") == 1);
  const auto& why = r->unreadable.at("cache");
  REQUIRE(why.size() == 2);
  CHECK_THAT(why[0], dbcheck_test::StartsWith("dbcheck.toml:6: cluster.cache.tls_ca_cert_file: "));
  CHECK_THAT(why[0], dbcheck_test::Contains("cannot read CA bundle " + dir.path + "/none.pem"));
  CHECK_THAT(why[1], dbcheck_test::StartsWith("dbcheck.toml:8: cluster.cache.tls_key_file: "));
  CHECK(why[1].find("key-material") == std::string::npos);
}
