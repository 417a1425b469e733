#include "dbcheck_catch.hpp"

#include <core/server_state.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

using namespace dbcheck::core;

namespace {

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) {
    out.push_back(w);
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) {
    out.push_back(l);
  }
  return out;
}

SavedState parsed(const std::string& text) {
  auto r = parse_server_state(text);
  REQUIRE(r);
  return *r;
}

// What HAProxy 2.6 `show servers state` prints: version, the 25 field names, one line per
// server (here web/w1 in maintenance, pg_write/pg2 draining with weight 50, pg_read/pg1 with
// its health check disabled, check_state 4 = configured only).
const std::string k_dump =
    "1\n"
    "# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight "
    "srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health "
    "srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord "
    "srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n"
    "2 pg_write 1 pg1 10.0.0.1 2 0 1 1 70 15 3 4 6 0 0 0 - 5432 - 0 0 - - 0\n"
    "2 pg_write 2 pg2 10.0.0.2 2 8 50 1 70 15 3 4 6 0 0 0 - 5432 - 0 0 - - 0\n"
    "3 pg_read 1 pg1 10.0.0.1 0 0 1 1 70 15 2 0 4 0 0 0 - 5432 - 0 0 - - 0\n"
    "4 web 1 w1 10.0.1.1 0 1 1 1 12 0 0 0 2 0 0 0 - 80 - 0 0 - - 0\n"
    "\n";

} // namespace

TEST_CASE("server_state: version 1, the field names, one line per server") {
  const std::string text = render_server_state({}, {{"pg_write", "pg1", 5432, true},
                                                    {"pg_write", "pg2", 5432, false},
                                                    {"pg_read", "pg2", 6432, true}});
  const auto l = lines_of(text);
  REQUIRE(l.size() == 5);
  CHECK(l[0] == "1");
  const auto names = words(l[1]);
  REQUIRE(names.size() == 21); // '#' and the 20 fields every version-1 reader takes
  CHECK((names[2] == "be_name" && names[4] == "srv_name" && names[6] == "srv_op_state" &&
         names[7] == "srv_admin_state" && names[19] == "srv_port"));
  const auto up = words(l[2]);
  REQUIRE(up.size() == 20);
  CHECK((up[1] == "pg_write" && up[3] == "pg1"));
  CHECK(up[4] == "-");                       // address: not applied
  CHECK(up[5] == "2");                       // SRV_ST_RUNNING
  CHECK(up[6] == "0");                       // admin state: the configuration's
  CHECK((up[7] == "256" && up[8] == "256")); // a weight applied only where it is already 256
  CHECK(up[10] == "1"); // check status INI: with 0 (UNKNOWN) HAProxy 2.6 never checks it
  CHECK(up[18] == "5432");
  CHECK(words(l[3])[5] == "0"); // SRV_ST_STOPPED
  CHECK((words(l[4])[1] == "pg_read" && words(l[4])[18] == "6432"));
}

TEST_CASE("server_state: no server, still a file HAProxy reads") {
  const std::string text = render_server_state({}, {});
  CHECK(text.rfind("1\n# be_id", 0) == 0);
  CHECK(std::count(text.begin(), text.end(), '\n') == 2);
}

TEST_CASE("server_state: a dump read back keeps every data line as written") {
  const SavedState s = parsed(k_dump);
  REQUIRE(s.lines.size() == 4);
  CHECK(s.lines[3].text == "4 web 1 w1 10.0.1.1 0 1 1 1 12 0 0 0 2 0 0 0 - 80 - 0 0 - - 0");
  CHECK(s.lines[3].fields.size() == 25);
  CHECK(s.lines[1].fields[3] == "pg2");
}

TEST_CASE("server_state: nothing saved yet reads as no line") {
  CHECK(parsed("").lines.empty());
  CHECK(parsed("\n\n").lines.empty());
  CHECK(parsed("1\n").lines.empty());
  CHECK(parsed("1\n# be_id be_name\n").lines.empty());
}

TEST_CASE("server_state: what is not a version-1 file is refused, its content not quoted") {
  const auto two = parse_server_state("s3cret\n# be_id\n");
  REQUIRE(!two);
  CHECK(two.error() == "its first line is not \"1\": not a version-1 server-state file");
  CHECK(!parse_server_state("global\n  maxconn 10\n"));
  CHECK(!parse_server_state("1 2 3\n"));
}

TEST_CASE("server_state: other servers' lines are carried over whole, dbcheck's replaced") {
  const std::string text = render_server_state(parsed(k_dump), {{"pg_write", "pg1", 5432, false},
                                                                {"pg_write", "pg2", 5432, true},
                                                                {"pg_read", "pg1", 5432, true},
                                                                {"pg_read", "pg3", 5432, false}});
  const auto l = lines_of(text);
  REQUIRE(l.size() == 2 + 5);
  // In the dump's order, then dbcheck's server the dump did not have.
  const auto pg1w = words(l[2]);
  const auto pg2w = words(l[3]);
  const auto pg1r = words(l[4]);
  CHECK(l[5] == "4 web 1 w1 10.0.1.1 0 1 1 1 12 0 0 0 2 0 0 0 - 80 - 0 0 - - 0");
  const auto pg3r = words(l[6]);
  REQUIRE((pg1w.size() == 20 && pg2w.size() == 20 && pg1r.size() == 20 && pg3r.size() == 20));
  // The operational state is dbcheck's; everything the operator set is the dump's.
  CHECK((pg1w[3] == "pg1" && pg1w[5] == "0" && pg1w[6] == "0"));
  CHECK((pg2w[3] == "pg2" && pg2w[5] == "2"));
  CHECK(pg2w[6] == "8");                      // DRAIN kept
  CHECK((pg2w[7] == "50" && pg2w[8] == "1")); // its weight, and the configured one it came with
  CHECK((pg1r[1] == "pg_read" && pg1r[5] == "2"));
  CHECK(pg1r[13] == "4"); // health check disabled: stays disabled
  CHECK(pg1r[10] == "1"); // check status INI, not the dump's
  CHECK(pg1r[4] == "-");  // address: the configuration's, as checked
  CHECK((pg3r[3] == "pg3" && pg3r[6] == "0" && pg3r[7] == "256"));
}

TEST_CASE("server_state: a field HAProxy would refuse is not copied into dbcheck's line") {
  // HAProxy drops a whole line with a non-numeric admin state: dbcheck's DOWN with it.
  const SavedState s = parsed("1\n0 b 0 s - 2 x 1 1 0 1 0 0 0 0 0 0 - 5432 -\n0 b 0 short\n");
  const auto l =
      lines_of(render_server_state(s, {{"b", "s", 5432, false}, {"b", "short", 1, true}}));
  REQUIRE(l.size() == 4);
  CHECK(words(l[2])[6] == "0");
  CHECK(words(l[2])[5] == "0");
  CHECK((words(l[3])[3] == "short" && words(l[3]).size() == 20 && words(l[3])[6] == "0"));
}

TEST_CASE("server_state: a repeated saved line: dbcheck's replaces the first, HAProxy's pick") {
  const SavedState s = parsed("1\n0 b 0 s - 2 1 1 1 0 1 0 0 0 0 0 0 - 1 -\n"
                              "0 b 0 s - 2 0 1 1 0 1 0 0 0 0 0 0 - 1 -\n");
  const auto l = lines_of(render_server_state(s, {{"b", "s", 1, false}}));
  REQUIRE(l.size() == 4);
  CHECK((words(l[2])[5] == "0" && words(l[2])[6] == "1"));
  CHECK(l[3] == "0 b 0 s - 2 0 1 1 0 1 0 0 0 0 0 0 - 1 -");
}

TEST_CASE("server_state: the saved admin state in an operator's words") {
  const SavedState s = parsed(k_dump);
  CHECK(saved_admin_state(s, "web", "w1") == "MAINT");
  CHECK(saved_admin_state(s, "pg_write", "pg2") == "DRAIN");
  CHECK(saved_admin_state(s, "pg_write", "pg1").empty());
  CHECK(saved_admin_state(s, "pg_write", "nope").empty());
  CHECK(saved_admin_state(parsed("1\n0 b 0 s - 2 9 1 1 0\n"), "b", "s") == "MAINT, DRAIN");
  CHECK(saved_admin_state(parsed("1\n0 b 0 s - 2 4 1 1 0\n"), "b", "s") == "MAINT"); // `disabled`
}
