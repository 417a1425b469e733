// The file as a whole: the documented example with its defaults filled in, and how problems
// read (file, line, key and what was expected, every one at once), an unreadable file too.
#include "config_load_fixtures.hpp"
#include "dbcheck_catch.hpp"
#include "temp_dir.hpp"

#include <config/load_config.hpp>

#include <string>
#include <vector>

using namespace dbcheck::config;
using namespace dbcheck::testing::config_load;
using dbcheck::testing::TempDir;

TEST_CASE("the documented example parses with defaults filled in", "[config]") {
  TempDir dir;
  const auto pw = dir.write("pg.password", "s3cret\n", 0600);
  const auto cfg = parse_config(valid_config(pw), "dbcheck.toml");
  REQUIRE(cfg);
  const auto& c = std::get<PostgresCluster>(cfg->clusters.at("pg"));
  CHECK(c.patroni == std::vector<std::string>{"http://10.0.0.1:8008", "http://10.0.0.2:8008"});
  CHECK(c.password.reveal() == "s3cret");
  CHECK(c.sslmode == "prefer");
  const Backend& w = cfg->backends.at("pg_write");
  CHECK(w.role == Role::primary);
  CHECK(w.timeout.count() == 800);
  CHECK(w.on_saturation == dbcheck::core::SaturationPolicy::up);
  const Backend& r = cfg->backends.at("pg_read");
  CHECK(r.role == Role::replica);
  CHECK(r.max_lag.count() == 1500);
}

TEST_CASE("errors name the file, line and key, and what was expected", "[config]") {
  TempDir dir;
  const auto pw = dir.write("pg.password", "s3cret\n", 0600);
  const std::string base = valid_config(pw);

  SECTION("a bad duration") {
    std::string text = base;
    text.replace(text.find("\"1.5s\""), 6, "\"5x\"");
    const auto r = parse_config(text, "dbcheck.toml");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r) == "dbcheck.toml:18: backend.pg_read.max_lag: \"5x\" is not a duration "
                          "(expected a number with a unit: ms, s or m, e.g. \"800ms\" or "
                          "\"1.5s\")\n");
  }
  SECTION("an unknown key") {
    std::string text = base;
    text.replace(text.find("role = \"primary\""), 16, "role = \"primary\"\nmaxlag = \"1s\"");
    const auto r = parse_config(text, "dbcheck.toml");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r) == "dbcheck.toml:14: backend.pg_write.maxlag: unknown key \"maxlag\" in "
                          "[backend.pg_write] (expected one of: cluster, role, timeout, max_lag, "
                          "max_latency, on_saturation, readers)\n");
  }
  SECTION("a wrong type, a bad enum and a missing cluster, all at once") {
    std::string text = base;
    text.replace(text.find("timeout = \"800ms\""), 17, "timeout = 800");
    text.replace(text.find("role = \"replica\""), 16, "role = \"reader\"");
    text.replace(text.find("cluster = \"pg\""), 14, "cluster = \"pgx\"");
    const auto r = parse_config(text, "dbcheck.toml");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r) ==
          "dbcheck.toml:2: defaults.timeout: expected a string, got an integer\n"
          "dbcheck.toml:12: backend.pg_write.cluster: no [cluster.pgx] is defined\n"
          "dbcheck.toml:15: backend.pg_read: missing required key \"role\" (\"primary\" or "
          "\"replica\")\n"
          "dbcheck.toml:17: backend.pg_read.role: \"reader\" is not one of \"primary\", "
          "\"replica\"\n");
  }
  SECTION("max_lag on a writer") {
    std::string text = base;
    text.replace(text.find("role = \"primary\""), 16, "role = \"primary\"\nmax_lag = \"1s\"");
    const auto r = parse_config(text, "dbcheck.toml");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r) == "dbcheck.toml:14: backend.pg_write.max_lag: applies only to role = "
                          "\"replica\"\n");
  }
  SECTION("max_latency: unset is no bound; set, it is kept for either role") {
    const auto plain = parse_config(base, "dbcheck.toml");
    REQUIRE(plain);
    CHECK_FALSE(plain->backends.at("pg_read").max_latency.has_value());
    CHECK_FALSE(plain->backends.at("pg_write").max_latency.has_value());
    std::string text = base;
    text.replace(text.find("role = \"primary\""), 16,
                 "role = \"primary\"\nmax_latency = \"500ms\"");
    text.replace(text.find("role = \"replica\""), 16, "role = \"replica\"\nmax_latency = \"0.3s\"");
    const auto r = parse_config(text, "dbcheck.toml");
    REQUIRE(r);
    CHECK(r->backends.at("pg_write").max_latency->count() == 500);
    CHECK(r->backends.at("pg_read").max_latency->count() == 300);
  }
  SECTION("max_latency must be below the timeout that applies") {
    std::string text = base;
    // [defaults]' timeout (800ms) applies to pg_read; pg_write states its own.
    text.replace(text.find("role = \"primary\""), 16,
                 "role = \"primary\"\ntimeout = \"1s\"\nmax_latency = \"1s\"");
    text.replace(text.find("role = \"replica\""), 16,
                 "role = \"replica\"\nmax_latency = \"900ms\"");
    const auto r = parse_config(text, "dbcheck.toml");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r) == "dbcheck.toml:15: backend.pg_write.max_latency: max_latency 1s must be "
                          "below timeout 1s\n"
                          "dbcheck.toml:20: backend.pg_read.max_latency: max_latency 900ms must "
                          "be below timeout 800ms\n");
  }
  SECTION("readers: synchronous replicas only, on a PostgreSQL reader") {
    std::string text = base;
    text.replace(text.find("role = \"replica\""), 16,
                 "role = \"replica\"\nreaders = \"synchronous\"");
    const auto r = parse_config(text, "dbcheck.toml");
    REQUIRE(r);
    CHECK(r->backends.at("pg_read").readers == dbcheck::core::ReaderChoice::synchronous);
    CHECK(r->backends.at("pg_write").readers == dbcheck::core::ReaderChoice::any);
  }
  SECTION("readers on a writer, and a value that is not a choice") {
    std::string text = base;
    text.replace(text.find("role = \"primary\""), 16,
                 "role = \"primary\"\nreaders = \"synchronous\"");
    text.replace(text.find("role = \"replica\""), 16, "role = \"replica\"\nreaders = \"sync\"");
    const auto r = parse_config(text, "dbcheck.toml");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r) == "dbcheck.toml:14: backend.pg_write.readers: applies only to role = "
                          "\"replica\"\n"
                          "dbcheck.toml:19: backend.pg_read.readers: \"sync\" is not one of "
                          "\"any\", \"synchronous\"\n");
  }
  SECTION("a Patroni client certificate without its key") {
    std::string text = base;
    text.replace(text.find("dbname = "), 9, "patroni_certfile = \"/etc/dbcheck/c.pem\"\ndbname = ");
    const auto r = parse_config(text, "dbcheck.toml");
    REQUIRE_FALSE(r);
    CHECK_THAT(errors_of(r),
               dbcheck_test::Contains("cluster.pg.patroni_certfile: needs patroni_certfile "
                                      "and patroni_keyfile together"));
  }
  SECTION("not TOML at all") {
    const auto r = parse_config("[cluster.pg\nengine = ", "dbcheck.toml");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r).rfind("dbcheck.toml:1: invalid TOML: ", 0) == 0);
  }
  SECTION("a URL that is not http(s)") {
    std::string text = base;
    text.replace(text.find("http://10.0.0.1:8008"), 20, "10.0.0.1:8008");
    const auto r = parse_config(text, "dbcheck.toml");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r) == "dbcheck.toml:6: cluster.pg.patroni: \"10.0.0.1:8008\" is not an "
                          "http:// or https:// URL\n");
  }
  SECTION("an unknown section") {
    const auto r = parse_config(base + "\n[backends.x]\ncluster = \"pg\"\n", "dbcheck.toml");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r) == "dbcheck.toml:20: backends: unknown section [backends] (expected "
                          "[defaults], [cluster.NAME], [backend.NAME], [agent] or [log])\n");
  }
}

TEST_CASE("load_config names an unreadable file", "[config]") {
  const auto r = load_config("/nonexistent/dbcheck.toml");
  REQUIRE_FALSE(r);
  CHECK(errors_of(r) ==
        "/nonexistent/dbcheck.toml: cannot read configuration: No such file or directory\n");
}
