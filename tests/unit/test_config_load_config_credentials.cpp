// The files a cluster names for its secrets: an unreadable or too open password file makes
// only its own cluster unusable and is never echoed, a client key is as strict as a password,
// and the operator's credentials are a path no check reads.
#include "config_load_fixtures.hpp"
#include "dbcheck_catch.hpp"
#include "temp_dir.hpp"

#include <config/client_cert_files.hpp>
#include <config/load_config.hpp>

#include <unistd.h>

#include <string>
#include <vector>

using namespace dbcheck::config;
using namespace dbcheck::testing::config_load;
using dbcheck::testing::TempDir;

TEST_CASE("an unreadable password file makes only its own cluster unusable", "[config]") {
  TempDir dir;
  const auto pw = dir.write("pg.password", "s3cret\n", 0600);
  const std::string other = R"(
[cluster.cache]
engine = "redis"
sentinels = ["10.0.0.1:26379"]
master_name = "mymaster"
password_file = ")" + dir.path +
                            R"(/missing"

[backend.cache]
cluster = "cache"
role = "primary"
)";
  const auto cfg = parse_config(valid_config(pw) + other, "dbcheck.toml");
  REQUIRE(cfg);
  CHECK(std::get<PostgresCluster>(cfg->clusters.at("pg")).password.reveal() == "s3cret");
  REQUIRE(cfg->unreadable.size() == 1);
  CHECK(cfg->unreadable.at("cache") ==
        std::vector<std::string>{"dbcheck.toml:24: cluster.cache.password_file: cannot read "
                                 "password file " +
                                 dir.path + "/missing: No such file or directory"});
  // The agent and config-check judge the whole file.
  const auto whole = all_readable(parse_config(valid_config(pw) + other, "dbcheck.toml"));
  REQUIRE_FALSE(whole);
  CHECK(whole.error().messages == cfg->unreadable.at("cache"));
  // With another error in the file, every problem is an error, in file order.
  std::string broken = valid_config(pw) + other;
  broken.replace(broken.find("\"1.5s\""), 6, "\"5x\"");
  const auto r = parse_config(broken, "dbcheck.toml");
  REQUIRE_FALSE(r);
  INFO(errors_of(r));
  REQUIRE(r.error().messages.size() == 2);
  CHECK_THAT(r.error().messages[0],
             dbcheck_test::StartsWith("dbcheck.toml:18: backend.pg_read.max_lag"));
  CHECK_THAT(r.error().messages[1], dbcheck_test::Contains("cluster.cache.password_file"));
}

TEST_CASE("password files: group/other access is refused, the secret never echoed", "[config]") {
  TempDir dir;
  const auto loose = dir.write("loose", "s3cret\n", 0644);
  const auto r = all_readable(parse_config(valid_config(loose), "dbcheck.toml"));
  REQUIRE_FALSE(r);
  const std::string text = errors_of(r);
  CHECK(text == "dbcheck.toml:9: cluster.pg.password_file: password file " + loose +
                    " is accessible by group or others (mode 0644); run: chmod 600 " + loose +
                    "\n");
  CHECK(text.find("s3cret") == std::string::npos);

  CHECK(read_password_file(dir.path + "/missing").error() ==
        "cannot read password file " + dir.path + "/missing: No such file or directory");
  CHECK(read_password_file(dir.write("empty", "\n", 0600)).error() ==
        "password file " + dir.path + "/empty is empty");
  CHECK(read_password_file(dir.write("two", "a\nb\n", 0600)).error() ==
        "password file " + dir.path + "/two has more than one line (expected the password alone)");
  CHECK(read_password_file(dir.write("ok", "pw with spaces\r\n", 0400))->reveal() ==
        "pw with spaces");
}

TEST_CASE("a client certificate: both files or neither, the key as strict as a password",
          "[config]") {
  TempDir dir;
  const auto pw = dir.write("pg.password", "s3cret\n", 0600);
  const std::string key_text =
      "-----BEGIN PRIVATE KEY-----\nkey-material\n-----END PRIVATE KEY-----\n";
  const auto cert = dir.write("hc.crt", "-----BEGIN CERTIFICATE-----\n", 0644);
  // The lines go before dbname: sslcert on line 7, sslkey on line 8.
  const auto with = [&](const std::string& lines) {
    std::string text = valid_config(pw);
    text.replace(text.find("dbname = "), 9, lines + "dbname = ");
    return parse_config(text, "dbcheck.toml");
  };
  const auto files = [](const std::string& c, const std::string& k) {
    return "sslcert = \"" + c + "\"\nsslkey = \"" + k + "\"\n";
  };
  // The one reason the cluster is unusable, given these files.
  const auto refused = [&](const std::string& c, const std::string& k) {
    const auto r = with(files(c, k));
    REQUIRE(r);
    REQUIRE(r->unreadable.count("pg") == 1);
    REQUIRE(r->unreadable.at("pg").size() == 1);
    const std::string why = r->unreadable.at("pg").front();
    CHECK(why.find("key-material") == std::string::npos);
    return why;
  };

  SECTION("both: the paths reach the cluster") {
    const auto key = dir.write("hc.key", key_text, 0600);
    const auto r = with(files(cert, key));
    REQUIRE(r);
    CHECK(r->unreadable.empty());
    const auto& c = std::get<PostgresCluster>(r->clusters.at("pg"));
    CHECK(c.sslcert == cert);
    CHECK(c.sslkey == key);
  }
  SECTION("neither: none") {
    const auto r = with("");
    REQUIRE(r);
    CHECK_FALSE(std::get<PostgresCluster>(r->clusters.at("pg")).sslcert);
  }
  SECTION("one without the other") {
    const auto r = with("sslcert = \"" + cert + "\"\n");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r) == "dbcheck.toml:4: cluster.pg.sslcert: needs sslcert and sslkey together "
                          "(the client certificate and its key)\n");
    const auto r2 = with("sslkey = \"" + dir.write("hc.key", key_text, 0600) + "\"\n");
    REQUIRE_FALSE(r2);
    CHECK_THAT(errors_of(r2),
               dbcheck_test::Contains("dbcheck.toml:4: cluster.pg.sslkey: needs sslcert"));
  }
  SECTION("a key the group may read: this cluster is unusable, saying how to fix it") {
    const auto key = dir.write("loose.key", key_text, 0640);
    CHECK(refused(cert, key) == "dbcheck.toml:8: cluster.pg.sslkey: client key file " + key +
                                    " is accessible by group or others (mode 0640); run: chmod "
                                    "600 " +
                                    key);
    // config-check and the agent refuse the whole file.
    CHECK_FALSE(all_readable(with(files(cert, key))));
  }
  SECTION("a link, an encrypted key, a certificate as the key, too large, a relative path") {
    const auto key = dir.write("hc.key", key_text, 0600);
    REQUIRE(::symlink(key.c_str(), (dir.path + "/link.key").c_str()) == 0);
    CHECK_THAT(refused(cert, dir.path + "/link.key"), dbcheck_test::Contains("is a symbolic link"));
    CHECK_THAT(refused(cert, dir.write("enc.key", "-----BEGIN ENCRYPTED PRIVATE KEY-----\n", 0600)),
               dbcheck_test::Contains("is encrypted"));
    CHECK_THAT(refused(cert, dir.write("c.key", "-----BEGIN CERTIFICATE-----\n", 0600)),
               dbcheck_test::Contains("is not a PEM private key"));
    CHECK_THAT(refused(cert, dir.write("big.key", std::string(k_max_key_file + 1, 'k'), 0600)),
               dbcheck_test::Contains("more than the 65536 allowed"));
    CHECK(refused(cert, "hc.key") ==
          "dbcheck.toml:8: cluster.pg.sslkey: client key file \"hc.key\" is not an absolute path");
  }
  SECTION("a missing certificate is named: libpq would silently send none") {
    const auto key = dir.write("hc.key", key_text, 0600);
    CHECK(refused(dir.path + "/none.crt", key) == "dbcheck.toml:7: cluster.pg.sslcert: cannot read "
                                                  "client certificate " +
                                                      dir.path +
                                                      "/none.crt: No such file or directory");
  }
}

TEST_CASE("operator credentials are a path only, never read by a check", "[config][switchover]") {
  // The check runs as HAProxy's user, which cannot (and must not) read the operator's file:
  // loading the configuration must not touch it, even when it does not exist.
  TempDir dir;
  const auto pw = dir.write("pg.password", "secret\n", 0600);
  std::string text = valid_config(pw);
  text.replace(text.find("\n[backend.pg_write]"), 0,
               "operator_user = \"dbcheck-operator\"\n"
               "operator_password_file = \"" +
                   dir.path + "/no-such-operator.password\"\n");
  const auto r = parse_config(text, "dbcheck.toml");
  REQUIRE(r);
  const auto& pg = std::get<PostgresCluster>(r->clusters.at("pg"));
  CHECK(pg.operator_user == "dbcheck-operator");
  CHECK(pg.operator_password_file == dir.path + "/no-such-operator.password");
}
