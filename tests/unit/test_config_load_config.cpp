#include "dbcheck_catch.hpp"
#include "temp_dir.hpp"

#include <config/client_cert_files.hpp>
#include <config/load_config.hpp>

#include <unistd.h>

#include <string>

using namespace dbcheck::config;
using dbcheck::testing::TempDir;

namespace {

std::string valid_config(const std::string& password_file) {
  return R"([defaults]
timeout = "800ms"

[cluster.pg]
engine = "postgres"
patroni = ["http://10.0.0.1:8008", "http://10.0.0.2:8008/"]
dbname = "app"
user = "healthcheck"
password_file = ")" +
         password_file + R"("

[backend.pg_write]
cluster = "pg"
role = "primary"

[backend.pg_read]
cluster = "pg"
role = "replica"
max_lag = "1.5s"
)";
}

std::string errors_of(const tl::expected<Config, ConfigError>& r) {
  std::string out;
  for (const auto& m : r.error().messages) {
    out += m + "\n";
  }
  return out;
}

} // namespace

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

TEST_CASE("load_config names an unreadable file", "[config]") {
  const auto r = load_config("/nonexistent/dbcheck.toml");
  REQUIRE_FALSE(r);
  CHECK(errors_of(r) ==
        "/nonexistent/dbcheck.toml: cannot read configuration: No such file or directory\n");
}

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

// The keys every [agent] section must state.
const std::string k_agent_ports =
    "listen = \"127.0.0.1:5555\"\nhttp_listen = \"127.0.0.1:8091\"\nallow = [\"127.0.0.1\"]\n";

TEST_CASE("agent.fastinter: follows a short interval, bounded by a quarter of it",
          "[config][agent]") {
  TempDir dir;
  const auto pw = dir.write("pg.password", "s3cret\n", 0600);
  const std::string base = valid_config(pw) + "\n[agent]\n" + k_agent_ports;
  // Unset: 250 ms, or the interval itself when that is shorter (a valid config stays valid).
  const auto short_interval =
      parse_config(base + "interval = \"200ms\"\nstale_after = \"1s\"\n", "dbcheck.toml");
  REQUIRE(short_interval);
  CHECK(short_interval->agent->fastinter.count() == 200);
  CHECK(parse_config(base, "dbcheck.toml")->agent->fastinter.count() == 250);
  const auto too_fast = parse_config(base + "fastinter = \"100ms\"\n", "dbcheck.toml");
  REQUIRE_FALSE(too_fast);
  CHECK(errors_of(too_fast).find("agent.fastinter: must be at least a quarter of agent.interval") !=
        std::string::npos);
  const auto quarter = parse_config(base + "fastinter = \"250ms\"\n", "dbcheck.toml");
  REQUIRE(quarter);
  CHECK(quarter->agent->fastinter.count() == 250);
}

TEST_CASE("the [agent] section: defaults, values and references", "[config][agent]") {
  TempDir dir;
  const auto pw = dir.write("pg.password", "s3cret\n", 0600);
  const std::string base = valid_config(pw);
  SECTION("absent: no agent settings") {
    CHECK_FALSE(parse_config(base, "dbcheck.toml")->agent);
  }
  SECTION("every key") {
    const auto cfg = parse_config(base + R"(
[agent]
listen = "127.0.0.1:5555"
http_listen = "127.0.0.1:8091"
allow = ["10.0.0.10", "10.0.1.0/24", "::1"]
expose_reasons = false
interval = "1s"
fastinter = "300ms"
fall = 3
rise = 4
lag_window = "10s"
stale_after = "2s"
shutdown_grace = "3s"
ready_window = "5s"
drain_file = "/etc/dbcheck/drain"
default_backend = "pg_write"
max_connections = 500

[agent.local]
pg = "10.0.0.1:5432"
)",
                                  "dbcheck.toml");
    REQUIRE(cfg);
    const AgentSettings& a = *cfg->agent;
    CHECK(a.listen == dbcheck::util::HostPort{"127.0.0.1", 5555});
    REQUIRE(a.allow.size() == 3);
    CHECK(dbcheck::util::to_string(a.allow[1]) == "10.0.1.0/24");
    CHECK_FALSE(a.expose_reasons);
    CHECK(a.interval.count() == 1000);
    CHECK(a.fastinter.count() == 300);
    CHECK(a.fall == 3);
    CHECK(a.rise == 4);
    CHECK(a.lag_window.count() == 10000);
    CHECK(a.drain_file == std::optional<std::string>{"/etc/dbcheck/drain"});
    CHECK(a.default_backend == std::optional<std::string>{"pg_write"});
    CHECK(a.max_connections == 500);
    CHECK(a.local.at("pg") == dbcheck::util::HostPort{"10.0.0.1", 5432});
  }
  SECTION("errors") {
    const auto r = parse_config(base + R"(
[agent]
fall = 0
interval = "5s"
fastinter = "6s"
default_backend = "nope"
listen = "5555"
allow = ["10.0.0.1/24", 7]
expose_reasons = "no"
http_certfile = "/etc/dbcheck/agent.crt"

[agent.local]
cache = "10.0.0.1:6379"
)",
                                "dbcheck.toml");
    REQUIRE_FALSE(r);
    CHECK(errors_of(r) ==
          "dbcheck.toml: agent.local.cache: no [cluster.cache] is defined\n"
          "dbcheck.toml: agent.default_backend: no [backend.nope] is defined\n"
          "dbcheck.toml:20: agent.http_listen: is required, e.g. \"10.0.0.1:8091\"\n"
          "dbcheck.toml:20: agent.http_keyfile: agent.http_certfile and agent.http_keyfile go "
          "together (HTTPS needs both)\n"
          "dbcheck.toml:20: agent.fastinter: must not be longer than agent.interval\n"
          "dbcheck.toml:20: agent.stale_after: must be at least twice agent.interval\n"
          "dbcheck.toml:21: agent.fall: expected a whole number from 1 to 100\n"
          "dbcheck.toml:25: agent.listen: \"5555\" is not HOST:PORT (e.g. 10.0.0.1:5432 or "
          "[::1]:5432)\n"
          "dbcheck.toml:26: agent.allow: \"10.0.0.1/24\": host bits are set below /24 (did you "
          "mean 10.0.0.0/24?)\n"
          "dbcheck.toml:26: agent.allow: expected a string, got an integer\n"
          "dbcheck.toml:27: agent.expose_reasons: expected true or false, got a string\n");
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

TEST_CASE("[log]: passes logged on change by default, a heartbeat, a private directory",
          "[config][log]") {
  TempDir dir;
  const auto pw = dir.write("pg.password", "s3cret\n", 0600);
  const auto with = [&](const std::string& lines) {
    return parse_config(valid_config(pw) + "\n[log]\n" + lines, "dbcheck.toml");
  };
  const auto plain = parse_config(valid_config(pw), "dbcheck.toml");
  REQUIRE(plain);
  CHECK(plain->log.passes == dbcheck::core::PassLogging::changes);
  CHECK(plain->log.pass_heartbeat == dbcheck::util::Duration{3'600'000});
  CHECK_FALSE(plain->log.state_dir);

  const auto set = with("passes = \"all\"\npass_heartbeat = \"10m\"\nstate_dir = \"/run/x\"\n");
  REQUIRE(set);
  CHECK(set->log.passes == dbcheck::core::PassLogging::all);
  CHECK(set->log.pass_heartbeat == dbcheck::util::Duration{600'000});
  CHECK(set->log.state_dir == std::optional<std::string>{"/run/x"});

  const auto bad = with("passes = \"some\"\npass_heartbeat = \"0s\"\nstate_dir = \"x\"\n");
  REQUIRE_FALSE(bad);
  CHECK(errors_of(bad) ==
        "dbcheck.toml:21: log.passes: \"some\" is not one of \"changes\", \"all\"\n"
        "dbcheck.toml:22: log.pass_heartbeat: \"0s\" must be longer than 0ms\n"
        "dbcheck.toml:23: log.state_dir: \"x\" is not an absolute path\n");
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
