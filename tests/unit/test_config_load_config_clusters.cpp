// A cluster's own keys: a Redis/Sentinel cluster's by engine, each Patroni member once, a
// writer's cluster open to a man in the middle, the shared Patroni view and the node's free space.
#include "config_load_fixtures.hpp"
#include "dbcheck_catch.hpp"
#include "temp_dir.hpp"

#include <config/load_config.hpp>

#include <optional>
#include <string>

using namespace dbcheck::config;
using namespace dbcheck::testing::config_load;
using dbcheck::testing::TempDir;

TEST_CASE("a Redis/Sentinel cluster: keys by engine", "[config][redis]") {
  TempDir dir;
  const auto pw = dir.write("redis.password", "r3dis\n", 0600);
  const auto spw = dir.write("sentinel.password", "s3ntinel\n", 0600);
  const std::string text = R"([cluster.cache]
engine = "redis"
sentinels = ["10.0.0.1:26379", "10.0.0.2:26379", "[::1]:26379"]
master_name = "mymaster"
user = "healthcheck"
password_file = ")" + pw + R"("
sentinel_user = "healthcheck"
sentinel_password_file = ")" +
                           spw + R"("

[backend.redis_write]
cluster = "cache"
role = "primary"

[backend.redis_read]
cluster = "cache"
role = "replica"
max_lag = "2s"
)";
  const auto cfg = parse_config(text, "dbcheck.toml");
  REQUIRE(cfg);
  const auto& c = std::get<RedisCluster>(cfg->clusters.at("cache"));
  REQUIRE(c.sentinels.size() == 3);
  CHECK(c.sentinels[2] == dbcheck::util::HostPort{"::1", 26379});
  CHECK(c.master_name == "mymaster");
  CHECK(c.user == std::optional<std::string>{"healthcheck"});
  CHECK(c.password.reveal() == "r3dis");
  CHECK(c.sentinel_password.reveal() == "s3ntinel");
  CHECK(cfg->backends.at("redis_read").max_lag.count() == 2000);

  SECTION("a PostgreSQL key in a Redis cluster, a bad address, a missing key") {
    std::string bad = text;
    bad.replace(bad.find("master_name = \"mymaster\""), 24, "dbname = \"app\"");
    bad.replace(bad.find("\"10.0.0.2:26379\""), 16, "\"10.0.0.2\"");
    const auto r = parse_config(bad, "dbcheck.toml");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r) ==
          "dbcheck.toml:1: cluster.cache: missing required key \"master_name\"\n"
          "dbcheck.toml:3: cluster.cache.sentinels: \"10.0.0.2\" is not HOST:PORT (e.g. "
          "10.0.0.1:5432 or [::1]:5432)\n"
          "dbcheck.toml:4: cluster.cache.dbname: unknown key \"dbname\" in [cluster.cache] "
          "(expected one of: engine, sentinels, master_name, user, password_file, sentinel_user, "
          "sentinel_password_file, operator_user, operator_password_file, require_tls, "
          "write_probe, tls, "
          "tls_ca_cert_file, tls_cert_file, tls_key_file, tls_server_name, sentinel_tls, "
          "sentinel_tls_ca_cert_file, sentinel_tls_cert_file, sentinel_tls_key_file, "
          "sentinel_tls_server_name)\n");
  }
  SECTION("PostgreSQL's TLS keys are refused by name, pointing at Redis's own") {
    for (const char* key : {"sslmode = \"require\"", "tls_cafile = \"/ca.pem\""}) {
      std::string bad = text;
      bad.replace(bad.find("master_name = \"mymaster\""), 24,
                  std::string("master_name = \"mymaster\"\n") + key);
      const auto r = parse_config(bad, "dbcheck.toml");
      REQUIRE_FALSE(r);
      const std::string name = std::string(key).substr(0, std::string(key).find(' '));
      CHECK(errors_of(r) ==
            "dbcheck.toml:5: cluster.cache." + name + ": \"" + name +
                "\": not a Redis key: TLS to the data nodes is tls = true with tls_ca_cert_file "
                "(and tls_cert_file, tls_key_file, tls_server_name), to the Sentinels the same "
                "keys prefixed sentinel_\n");
    }
  }
  SECTION("a Sentinel listed twice, however spelled, is refused: it would vote twice") {
    std::string bad = text;
    bad.replace(bad.find("\"10.0.0.2:26379\""), 16, "\"10.0.0.1:26379\"");
    bad.replace(bad.find("\"[::1]:26379\""), 13, "\"[0:0::1]:26379\", \"[::1]:26379\"");
    const auto r = parse_config(bad, "dbcheck.toml");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r) ==
          "dbcheck.toml:3: cluster.cache.sentinels: Sentinel 10.0.0.1:26379 is listed twice (as "
          "\"10.0.0.1:26379\" and \"10.0.0.1:26379\"): each Sentinel must appear once, or it "
          "would count twice towards the majority\n"
          "dbcheck.toml:3: cluster.cache.sentinels: Sentinel [::1]:26379 is listed twice (as "
          "\"[0:0::1]:26379\" and \"[::1]:26379\"): each Sentinel must appear once, or it would "
          "count twice towards the majority\n");
  }
  SECTION("an unknown engine") {
    std::string bad = text;
    bad.replace(bad.find("engine = \"redis\""), 16, "engine = \"mysql\"");
    const auto r = parse_config(bad, "dbcheck.toml");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r) == "dbcheck.toml:2: cluster.cache.engine: \"mysql\" is not one of "
                          "\"postgres\", \"redis\"\n"
                          "dbcheck.toml:11: backend.redis_write.cluster: no [cluster.cache] is "
                          "defined\n"
                          "dbcheck.toml:15: backend.redis_read.cluster: no [cluster.cache] is "
                          "defined\n");
  }
}

TEST_CASE("a Patroni member listed twice is refused: it would vote twice", "[config]") {
  TempDir dir;
  const std::string pw = dir.write("pg.password", "secret\n", 0600);
  std::string text = valid_config(pw);
  text.replace(text.find("\"http://10.0.0.2:8008/\""), 23,
               "\"http://10.0.0.2:8008/\", \"http://10.0.0.1:8008/\", \"https://10.0.0.1:8008\", "
               "\"http://proxy/pg1\", \"http://proxy/pg2\"");
  const auto r = parse_config(text, "dbcheck.toml");
  REQUIRE_FALSE(r);
  // Another scheme or another path below one proxy is another member; the same origin is not.
  CHECK(errors_of(r) ==
        "dbcheck.toml:6: cluster.pg.patroni: \"http://10.0.0.1:8008\" is listed twice (also as "
        "\"http://10.0.0.1:8008\"): each member must appear once, or it would count twice towards "
        "the majority\n");
}

TEST_CASE("a writer reachable by a man in the middle: a warning, or an error under require_tls",
          "[config][tls]") {
  TempDir dir;
  const auto pw = dir.write("pg.password", "s3cret\n", 0600);
  const auto warned = parse_config(valid_config(pw), "dbcheck.toml");
  REQUIRE(warned);
  REQUIRE(warned->warnings.size() == 2);
  CHECK(warned->warnings[0] ==
        "dbcheck.toml:4: cluster.pg.sslmode: \"prefer\" does not verify the node: a man in the "
        "middle can strip TLS or pose as the node, answer \"primary\" and read the check's "
        "password; set sslmode = \"verify-full\" with sslrootcert (require_tls = true makes this "
        "an error)");
  CHECK(warned->warnings[1].find("cluster.pg.patroni: \"http://10.0.0.1:8008\" is plain http") !=
        std::string::npos);

  // Only clusters a writer uses are warned about.
  std::string readers_only = valid_config(pw);
  readers_only.replace(readers_only.find("role = \"primary\""), 16, "role = \"replica\"");
  CHECK(parse_config(readers_only, "dbcheck.toml")->warnings.empty());

  std::string strict = valid_config(pw);
  strict.insert(strict.find("dbname"), "require_tls = true\n");
  const auto refused = parse_config(strict, "dbcheck.toml");
  REQUIRE_FALSE(refused);
  CHECK(errors_of(refused).find("cluster.pg.sslmode: \"prefer\" does not verify the node") !=
        std::string::npos);
  CHECK(errors_of(refused).find("(require_tls = true)") != std::string::npos);

  std::string safe = valid_config(pw);
  for (std::size_t at; (at = safe.find("http://")) != std::string::npos;) {
    safe.replace(at, 7, "https://");
  }
  safe.insert(safe.find("dbname"), "require_tls = true\nsslmode = \"verify-full\"\n"
                                   "sslrootcert = \"/etc/dbcheck/ca.crt\"\n");
  const auto ok = parse_config(safe, "dbcheck.toml");
  REQUIRE(ok);
  CHECK(ok->warnings.empty());
}

TEST_CASE("the shared Patroni view: auto, or at most 2 s, in an absolute directory", "[config]") {
  TempDir dir;
  const auto pw = dir.write("pg.password", "s3cret\n", 0600);
  const auto with = [&](const std::string& lines) {
    std::string text = valid_config(pw);
    text.insert(text.find("dbname"), lines);
    return parse_config(text, "dbcheck.toml");
  };
  const auto plain = parse_config(valid_config(pw), "dbcheck.toml");
  REQUIRE(plain);
  // Shared by default, for the checks' own cadence ("auto"): none set.
  CHECK_FALSE(std::get<PostgresCluster>(plain->clusters.at("pg")).shared_view_max_age);
  const auto off = with("shared_view_max_age = \"0s\"\n");
  REQUIRE(off);
  CHECK(std::get<PostgresCluster>(off->clusters.at("pg")).shared_view_max_age ==
        dbcheck::util::Duration{0});
  const auto automatic = with("shared_view_max_age = \"auto\"\n");
  REQUIRE(automatic);
  CHECK_FALSE(std::get<PostgresCluster>(automatic->clusters.at("pg")).shared_view_max_age);
  const auto words = with("shared_view_max_age = \"often\"\n");
  REQUIRE_FALSE(words);
  CHECK(errors_of(words).find("cluster.pg.shared_view_max_age") != std::string::npos);

  const auto shared = with("shared_view_max_age = \"500ms\"\nshared_view_dir = \"/run/views\"\n");
  REQUIRE(shared);
  const auto& c = std::get<PostgresCluster>(shared->clusters.at("pg"));
  CHECK(c.shared_view_max_age == dbcheck::util::Duration{500});
  CHECK(c.shared_view_dir == std::optional<std::string>{"/run/views"});

  const auto long_ago = with("shared_view_max_age = \"3s\"\n");
  REQUIRE_FALSE(long_ago);
  CHECK(errors_of(long_ago).find("cluster.pg.shared_view_max_age: at most 2s") !=
        std::string::npos);
  const auto relative = with("shared_view_dir = \"views\"\n");
  REQUIRE_FALSE(relative);
  CHECK(errors_of(relative).find("cluster.pg.shared_view_dir: \"views\" is not an absolute path") !=
        std::string::npos);
}

TEST_CASE("free space on the node: a data directory, a size or a share, an inode count",
          "[config][disk_space]") {
  TempDir dir;
  const auto pw = dir.write("pg.password", "s3cret\n", 0600);
  const auto with = [&](const std::string& lines) {
    std::string text = valid_config(pw);
    text.insert(text.find("dbname"), lines);
    return parse_config(text, "dbcheck.toml");
  };
  const auto plain = parse_config(valid_config(pw), "dbcheck.toml");
  REQUIRE(plain);
  const auto& defaults = std::get<PostgresCluster>(plain->clusters.at("pg"));
  CHECK_FALSE(defaults.data_directory); // not measured unless told where
  CHECK(defaults.disk.min_free_space.bytes == 1ULL << 30);
  CHECK_FALSE(defaults.disk.min_free_space.percent);
  CHECK(defaults.disk.min_free_inodes == 1000);

  const auto sized = with("data_directory = \"/var/lib/postgresql/17/main\"\n"
                          "min_free_space = \"512MiB\"\nmin_free_inodes = 0\n");
  REQUIRE(sized);
  const auto& c = std::get<PostgresCluster>(sized->clusters.at("pg"));
  CHECK(c.data_directory == std::optional<std::string>{"/var/lib/postgresql/17/main"});
  CHECK(c.disk.min_free_space.bytes == 512ULL << 20);
  CHECK(c.disk.min_free_inodes == 0);

  const auto share = with("min_free_space = \"2.5%\"\n");
  REQUIRE(share);
  CHECK(std::get<PostgresCluster>(share->clusters.at("pg")).disk.min_free_space.percent == 2.5);

  // The key's own line (line 7: the cluster's keys start at line 5) leads each error.
  const auto [lines, error] = GENERATE(table<const char*, const char*>({
      {"min_free_space = \"1GB\"\n",
       "dbcheck.toml:7: cluster.pg.min_free_space: \"1GB\" is not a size (expected a number with "
       "a unit: B, KiB, MiB, GiB or TiB, e.g. \"1GiB\" or \"512MiB\"), or a percentage such as "
       "\"5%\""},
      {"min_free_space = \"100%\"\n",
       "dbcheck.toml:7: cluster.pg.min_free_space: \"100%\" is not a share of the filesystem "
       "(expected a percentage above 0 and below 100, e.g. \"5%\")"},
      {"min_free_space = \"x%\"\n", "\"x%\" is not a share of the filesystem"},
      {"min_free_space = 1024\n", "cluster.pg.min_free_space: expected a string"},
      {"min_free_inodes = -1\n",
       "dbcheck.toml:7: cluster.pg.min_free_inodes: expected a whole number from 0 to "
       "1099511627776"},
      {"min_free_inodes = \"1000\"\n", "cluster.pg.min_free_inodes: expected a whole number"},
      {"data_directory = \"main\"\n",
       "dbcheck.toml:7: cluster.pg.data_directory: \"main\" is not an absolute path"},
  }));
  CAPTURE(lines);
  const auto bad = with(lines);
  REQUIRE_FALSE(bad);
  CHECK(errors_of(bad).find(error) != std::string::npos);
}
