// source_cluster: a standby cluster names the PostgreSQL cluster it replicates from; the name is
// checked against the whole file and the source's settings linked (config/source_cluster.hpp).
#include "dbcheck_catch.hpp"
#include "temp_dir.hpp"

#include <config/load_config.hpp>

#include <string>

using namespace dbcheck::config;
using dbcheck::testing::TempDir;

namespace {

// [cluster.main] and [cluster.standby] (source_cluster = `source`, on line 13), a backend each;
// `more` is appended.
std::string two_clusters(const std::string& source, const std::string& main_password,
                         const std::string& more = "") {
  return R"([cluster.main]
engine = "postgres"
patroni = ["http://10.0.0.1:8008"]
dbname = "app"
user = "main_hc"
password_file = ")" +
         main_password + R"("

[cluster.standby]
engine = "postgres"
patroni = ["http://10.0.1.1:8008"]
dbname = "app"
user = "standby_hc"
source_cluster = ")" +
         source + R"("

[backend.main_read]
cluster = "main"
role = "replica"

[backend.standby_read]
cluster = "standby"
role = "replica"
)" + more;
}

std::string errors_of(const tl::expected<Config, ConfigError>& r) {
  std::string out;
  for (const auto& m : r.error().messages) {
    out += m + "\n";
  }
  return out;
}

} // namespace

TEST_CASE("source_cluster links the source's settings to the standby cluster",
          "[config][standby]") {
  TempDir dir;
  const auto pw = dir.write("main.password", "s3cret\n", 0600);
  const auto cfg = parse_config(two_clusters("main", pw), "dbcheck.toml");
  INFO((cfg ? std::string{} : errors_of(cfg)));
  REQUIRE(cfg);
  const auto& standby = std::get<PostgresCluster>(cfg->clusters.at("standby"));
  CHECK(standby.source_cluster == "main");
  REQUIRE(standby.source);
  CHECK(standby.source->user == "main_hc");
  CHECK(standby.source->password.reveal() == "s3cret");
  CHECK(standby.source->patroni == std::vector<std::string>{"http://10.0.0.1:8008"});
  CHECK(standby.source_unusable.empty());
  CHECK_FALSE(std::get<PostgresCluster>(cfg->clusters.at("main")).source);
}

TEST_CASE("source_cluster: another PostgreSQL cluster of the file, at the head of its chain",
          "[config][standby]") {
  TempDir dir;
  const auto pw = dir.write("main.password", "s3cret\n", 0600);
  const auto error_for = [&](const std::string& source, const std::string& more = "") {
    const auto r = parse_config(two_clusters(source, pw, more), "dbcheck.toml");
    REQUIRE_FALSE(r);
    REQUIRE(r.error().messages.size() == 1);
    return r.error().messages.front();
  };
  CHECK(error_for("nowhere") ==
        "dbcheck.toml:13: cluster.standby.source_cluster: no [cluster.nowhere] is defined");
  CHECK(error_for("standby") == "dbcheck.toml:13: cluster.standby.source_cluster: names its own "
                                "section: a standby cluster replicates from another cluster");
  CHECK(error_for("cache", R"(
[cluster.cache]
engine = "redis"
sentinels = ["10.0.0.1:26379"]
master_name = "mymaster"
)") == "dbcheck.toml:13: cluster.standby.source_cluster: [cluster.cache] is not a PostgreSQL "
       "cluster: a standby cluster replicates from a PostgreSQL cluster under Patroni");
  CHECK_THAT(error_for("main", R"(
[cluster.cascade]
engine = "postgres"
patroni = ["http://10.0.2.1:8008"]
dbname = "app"
user = "hc"
source_cluster = "standby"
)"),
             dbcheck_test::StartsWith(
                 "dbcheck.toml:28: cluster.cascade.source_cluster: [cluster.standby] is itself a "
                 "standby cluster (source_cluster = \"main\")"));
}

TEST_CASE("an unreadable source: the standby's readers keep the commit age and say why",
          "[config][standby]") {
  TempDir dir;
  const auto cfg = parse_config(two_clusters("main", dir.path + "/missing"), "dbcheck.toml");
  REQUIRE(cfg);
  REQUIRE(cfg->unreadable.count("main") == 1);
  CHECK(cfg->unreadable.count("standby") == 0); // its checks still run
  const auto& standby = std::get<PostgresCluster>(cfg->clusters.at("standby"));
  CHECK_THAT(standby.source_unusable,
             dbcheck_test::StartsWith("dbcheck.toml:6: cluster.main.password_file: cannot read"));
}

TEST_CASE("source_cluster is a string", "[config][standby]") {
  TempDir dir;
  const auto pw = dir.write("main.password", "s3cret\n", 0600);
  std::string text = two_clusters("main", pw);
  text.replace(text.find("source_cluster = \"main\""), 23, "source_cluster = 3");
  const auto r = parse_config(text, "dbcheck.toml");
  REQUIRE_FALSE(r);
  CHECK_THAT(errors_of(r),
             dbcheck_test::StartsWith("dbcheck.toml:13: cluster.standby.source_cluster"));
}
