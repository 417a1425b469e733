#include <core/server_state.hpp>

#include <catch2/catch.hpp>

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

} // namespace

TEST_CASE("server_state: version 1, the field names, one line per server") {
  const std::string text = render_server_state(
      {{"pg_write", "pg1", 5432, true}, {"pg_write", "pg2", 5432, false}, {"pg_read", "pg2", 6432, true}});
  std::istringstream in(text);
  std::string version, header, a, b, c, rest;
  std::getline(in, version);
  std::getline(in, header);
  std::getline(in, a);
  std::getline(in, b);
  std::getline(in, c);
  CHECK(version == "1");
  const auto names = words(header);
  REQUIRE(names.size() == 21); // '#' and the 20 fields every version-1 reader takes
  CHECK((names[2] == "be_name" && names[4] == "srv_name" && names[6] == "srv_op_state" &&
         names[19] == "srv_port"));
  const auto up = words(a);
  REQUIRE(up.size() == 20);
  CHECK((up[1] == "pg_write" && up[3] == "pg1"));
  CHECK(up[4] == "-");   // address: not applied
  CHECK(up[5] == "2");   // SRV_ST_RUNNING
  CHECK(up[6] == "0");   // admin state: the configuration's
  CHECK(up[10] == "1");  // check status INI: with 0 (UNKNOWN) HAProxy 2.6 never checks it
  CHECK(up[18] == "5432");
  CHECK(words(b)[5] == "0"); // SRV_ST_STOPPED
  CHECK((words(c)[1] == "pg_read" && words(c)[18] == "6432"));
  CHECK(!std::getline(in, rest));
}

TEST_CASE("server_state: no server, still a file HAProxy reads") {
  const std::string text = render_server_state({});
  CHECK(text.rfind("1\n# be_id", 0) == 0);
  CHECK(std::count(text.begin(), text.end(), '\n') == 2);
}
