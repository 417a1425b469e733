#include <core/status_table.hpp>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

using namespace dbcheck::core;

namespace {

ClusterStatus three_nodes(const std::string& leader) {
  ClusterStatus c{"pg", "postgres", "Patroni names " + leader + " leader", {"pg_write", "pg_read"}, {}, {}};
  for (const std::string name : {"pg1", "pg2", "pg3"}) {
    const bool is_leader = name == leader;
    c.nodes.push_back(
        {name,
         "10.0.0." + name.substr(2) + ":5432",
         is_leader ? "leader running" : "replica streaming",
         {{"pg_write", is_leader, is_leader ? "" : "role",
           is_leader ? "" : "not the writer: Patroni names " + leader + " leader, and a long tail " + std::string(80, 'x')},
          {"pg_read", !is_leader, is_leader ? "role" : "", is_leader ? "a primary, not a replica" : ""}}});
  }
  return c;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    out.push_back(l);
  }
  return out;
}

} // namespace

TEST_CASE("status_table: a title, a header, a row per node, why each DOWN is DOWN") {
  const auto text = render_status_text({three_nodes("pg1")}, nullptr, 80);
  const auto l = lines(text);
  REQUIRE(l.size() >= 9);
  CHECK(l[0] == "pg (postgres): Patroni names pg1 leader");
  CHECK(l[1].rfind("NODE", 0) == 0);
  CHECK(l[2].find("pg1 10.0.0.1:5432") == 0);
  CHECK(l[2].find("UP") != std::string::npos);
  CHECK(l[5] == "why DOWN:");
  for (const auto& line : l) {
    CHECK(line.size() <= 80);
  }
  CHECK(text.find("...") != std::string::npos); // the long reason was cut at 80 columns
  CHECK(render_status_text({three_nodes("pg1")}, nullptr, 0).find(std::string(80, 'x')) != std::string::npos);
}

TEST_CASE("status_table: what changed since the last screen is marked") {
  const std::vector<ClusterStatus> before{three_nodes("pg1")};
  const auto text = render_status_text({three_nodes("pg2")}, &before, 80);
  const auto l = lines(text);
  CHECK(l[2].find("*replica streaming") != std::string::npos); // pg1's manager role changed
  CHECK(l[3].find("*UP") != std::string::npos);                // pg2 became the writer
  CHECK(l[4].find('*') == std::string::npos);                  // pg3: nothing changed
  // The same screen twice: nothing marked.
  CHECK(render_status_text(before, &before, 80).find('*') == std::string::npos);
}

TEST_CASE("status_table: JSON with each node's verdict per backend") {
  const auto doc = nlohmann::json::parse(render_status_json({three_nodes("pg1")}));
  const auto& c = doc["clusters"][0];
  CHECK(c["manager"] == "Patroni names pg1 leader");
  CHECK(c["nodes"][0]["verdicts"]["pg_write"]["state"] == "up");
  CHECK(c["nodes"][0]["verdicts"]["pg_write"]["failure"] == "none");
  CHECK(c["nodes"][1]["verdicts"]["pg_write"]["failure"] == "role");
  CHECK(c["nodes"][1]["address"] == "10.0.0.2:5432");
}
