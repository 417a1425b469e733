#include "dbcheck_catch.hpp"
#include "status_table.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

using namespace dbcheck::extcheck;

namespace {

ClusterStatus three_nodes(const std::string& leader) {
  ClusterStatus c;
  c.name = "pg";
  c.engine = "postgres";
  c.manager = "Patroni names " + leader + " leader";
  c.backends = {"pg_write", "pg_read"};
  for (const std::string name : {"pg1", "pg2", "pg3"}) {
    const bool is_leader = name == leader;
    StatusNode n;
    n.name = name;
    n.address = "10.0.0." + name.substr(2) + ":5432";
    n.manager = is_leader ? "leader running" : "replica streaming";
    n.cells = {{"pg_write", is_leader, is_leader ? "" : "role",
                is_leader ? ""
                          : "not the writer: Patroni names " + leader +
                                " leader, and a long tail " + std::string(80, 'x')},
               {"pg_read", !is_leader, is_leader ? "role" : "",
                is_leader ? "a primary, not a replica" : ""}};
    n.timeline = "4";
    n.manager_lag = is_leader ? "" : "0";
    n.own = is_leader ? "primary, read-write" : "replica, streaming, timeline 4";
    if (!is_leader) {
      n.lag_s = 0.021;
      n.lag_derivation = "replayed past the primary's WAL position 0.021 s after it was sampled";
    }
    c.nodes.push_back(n);
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

TEST_CASE("status_table: a title, a header, a row per node, why each DOWN is DOWN", "[extcheck]") {
  const auto text = render_status_text({three_nodes("pg1")}, nullptr, 80);
  const auto l = lines(text);
  REQUIRE(l.size() >= 9);
  CHECK(l[0] == "pg (postgres): Patroni names pg1 leader");
  CHECK(l[1].rfind("NODE", 0) == 0);
  CHECK(l[2].find("pg1 10.0.0.1:5432") == 0);
  CHECK(l[2].find("UP") != std::string::npos);
  // What each node says: Patroni's timeline and lag, the node's own answer, the lag bound.
  CHECK(l[5] == "NODE TL LAG(B) OWN ANSWER                     LAG(S)");
  CHECK(l[6] == "pg1  4         primary, read-write");
  CHECK(l[7] == "pg2  4  0      replica, streaming, timeline 4 0.02");
  CHECK(l[9] == "lag in seconds, how it was bounded:");
  CHECK(l[10].rfind("  pg2: replayed past the primary's WAL position", 0) == 0);
  CHECK(std::find(l.begin(), l.end(), "why DOWN:") != l.end());
  for (const auto& line : l) {
    CHECK(line.size() <= 80);
  }
  CHECK(text.find("...") != std::string::npos); // the long reason was cut at 80 columns
  CHECK(render_status_text({three_nodes("pg1")}, nullptr, 0).find(std::string(80, 'x')) !=
        std::string::npos);
}

TEST_CASE("status_table: what changed since the last screen is marked", "[extcheck]") {
  const std::vector<ClusterStatus> before{three_nodes("pg1")};
  const auto text = render_status_text({three_nodes("pg2")}, &before, 80);
  const auto l = lines(text);
  CHECK(l[2].find("*replica streaming") != std::string::npos);   // pg1's manager role changed
  CHECK(l[3].find("*UP") != std::string::npos);                  // pg2 became the writer
  CHECK(l[4].find('*') == std::string::npos);                    // pg3: nothing changed
  CHECK(l[6].find("*replica, streaming") != std::string::npos);  // pg1's own answer changed
  CHECK(l[7].find("*primary, read-write") != std::string::npos); // and pg2's
  CHECK(l[8].find('*') == std::string::npos);
  // The same screen twice: nothing marked.
  CHECK(render_status_text(before, &before, 80).find('*') == std::string::npos);
}

TEST_CASE("status_table: JSON with each node's verdict per backend", "[extcheck]") {
  const auto doc = nlohmann::json::parse(render_status_json({three_nodes("pg1")}));
  const auto& c = doc["clusters"][0];
  CHECK(c["manager"] == "Patroni names pg1 leader");
  CHECK(c["nodes"][0]["verdicts"]["pg_write"]["state"] == "up");
  CHECK(c["nodes"][0]["verdicts"]["pg_write"]["failure"] == "none");
  CHECK(c["nodes"][1]["verdicts"]["pg_write"]["failure"] == "role");
  CHECK(c["nodes"][1]["address"] == "10.0.0.2:5432");
  CHECK(c["nodes"][1]["timeline"] == "4");
  CHECK(c["nodes"][1]["own"] == "replica, streaming, timeline 4");
  CHECK(c["nodes"][1]["lag_s"] == 0.021);
  CHECK(c["nodes"][0]["lag_s"].is_null());
  CHECK(c["sentinels"].empty());
}

TEST_CASE("status_table: a Redis cluster lists each Sentinel's answer, flags and epoch",
          "[extcheck]") {
  ClusterStatus c;
  c.name = "cache";
  c.engine = "redis";
  c.manager = "2 of 3 Sentinels name 10.0.0.1:6379 master";
  c.backends = {"r_write"};
  StatusNode n;
  n.name = "master";
  n.address = "10.0.0.1:6379";
  n.manager = "master 2/3";
  n.cells = {{"r_write", true, "", ""}};
  n.own = "master";
  c.nodes.push_back(n);
  c.sentinels = {{"10.0.0.1:26379", "10.0.0.1:6379", "master", "3"},
                 {"10.0.0.2:26379", "10.0.0.1:6379", "master", "3"},
                 {"10.0.0.3:26379", "no answer (timeout)", "", ""}};
  const auto l = lines(render_status_text({c}, nullptr, 80));
  REQUIRE(l.size() >= 9);
  CHECK(l[3] == "NODE   OWN ANSWER LAG(S)"); // no manager timeline or lag: no such columns
  CHECK(l[5].rfind("SENTINEL", 0) == 0);
  CHECK(l[6] == "10.0.0.1:26379 10.0.0.1:6379       master 3");
  CHECK(l[8] == "10.0.0.3:26379 no answer (timeout)");
  const auto doc = nlohmann::json::parse(render_status_json({c}));
  CHECK(doc["clusters"][0]["sentinels"][2]["names"] == "no answer (timeout)");
  CHECK(doc["clusters"][0]["sentinels"][0]["epoch"] == "3");
}

TEST_CASE("status_table: long entries are cut with '...' on a screen, never in a pipe",
          "[extcheck]") {
  ClusterStatus c = three_nodes("pg1");
  c.nodes[1].name = "postgresql-production-2";
  c.nodes[2].name = "postgresql-production-3";
  c.nodes[1].own = "replica, streaming, timeline 12, replay paused, and then some more words";
  c.nodes[1].manager_lag = "12884901888"; // 12 GiB
  const auto screen = lines(render_status_text({c}, nullptr, 80));
  const auto opinion = std::find_if(screen.begin(), screen.end(), [](const std::string& l) {
    return l.rfind("NODE", 0) == 0 && l.find("OWN ANSWER") != std::string::npos;
  });
  REQUIRE(opinion != screen.end());
  // Names keep their ends (what tells them apart); texts keep their starts; a cut says so.
  CHECK(opinion[2].rfind("...roduction-2 ", 0) == 0); // 14 columns
  CHECK(opinion[3].rfind("...roduction-3 ", 0) == 0);
  CHECK(opinion[2].find("12GiB") != std::string::npos); // bytes in units, never cut short
  CHECK(opinion[2].find("...") != std::string::npos);
  for (const auto& line : screen) {
    CHECK(line.size() <= 80);
  }
  // Piped (width 0): everything whole.
  const auto whole = render_status_text({c}, nullptr, 0);
  CHECK(whole.find("postgresql-production-2") != std::string::npos);
  CHECK(whole.find("and then some more words") != std::string::npos);
}

TEST_CASE("status_table: peers' words cannot drive the terminal or break the JSON", "[extcheck]") {
  ClusterStatus c = three_nodes("pg1");
  c.nodes[1].manager_lag = "\x1b[2Jgotcha";
  c.nodes[2].own = "replica of x, link \x1b]0;title\x07\nfake line";
  c.nodes[2].cells[0].reason = "bad\xff\xfe utf-8 \x1b[31m";
  const auto text = render_status_text({c}, nullptr, 0);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find('\x07') == std::string::npos);
  CHECK(text.find("\nfake line") == std::string::npos);
  const auto doc = nlohmann::json::parse(render_status_json({c})); // no exception, valid UTF-8
  CHECK(doc["clusters"][0]["nodes"][2]["verdicts"]["pg_write"]["reason"].get<std::string>().find(
            "utf-8") != std::string::npos);
}

TEST_CASE("status_table: a note sits below the verdicts, wrapped whole on a screen", "[extcheck]") {
  ClusterStatus c = three_nodes("pg1");
  const std::string note = "replicas unknown: the Sentinel user may not run SENTINEL REPLICAS "
                           "(NOPERM); add +sentinel|replicas to its ACL";
  c.notes = {note};
  const auto l = lines(render_status_text({c}, nullptr, 60));
  const auto first =
      std::find(l.begin(), l.end(), "note: replicas unknown: the Sentinel user may not run");
  REQUIRE(first != l.end());
  // Right after the last row of the verdict table, before what each node says.
  CHECK((first - 1)->rfind("pg3 ", 0) == 0);
  std::string joined = *first;
  for (auto it = first + 1; it != l.end() && it->rfind("  ", 0) == 0; ++it) {
    CHECK(it->size() <= 60);
    joined += " " + it->substr(2);
  }
  CHECK(joined == "note: " + note);
  // Piped: one line.
  CHECK(render_status_text({c}, nullptr, 0).find("note: " + note + "\n") != std::string::npos);
}
