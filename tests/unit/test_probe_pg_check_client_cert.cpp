// The check user's client certificate in the PostgreSQL check, through scripted peers
// (pg_check_fixtures.hpp): it reaches every libpq target, and explain names it, never its key.
#include "dbcheck_catch.hpp"
#include "pg_check_fixtures.hpp"

#include <core/report.hpp>
#include <probe/pg_check.hpp>

#include <string>

using namespace dbcheck;
using namespace dbcheck::testing::pg_check;

TEST_CASE("a client certificate reaches libpq's target; explain names it, never the key",
          "[probe][pg]") {
  auto f = lab({"0/3000060"});
  auto c = cluster();
  c.sslcert = "/etc/dbcheck/hc.crt";
  c.sslkey = "/etc/dbcheck/hc.key";
  const auto r = probe::check_postgres(c, backend(config::Role::replica), k_replica,
                                       probe::Deadline::in(util::Duration{10000}), f);
  REQUIRE(testing::settled(f));
  CHECK(r.verdict.state == core::State::up);
  // The replica and the leader's sample: both connections present the certificate.
  const auto targets = f->pg_targets();
  REQUIRE(targets.size() == 2);
  for (const auto& t : targets) {
    CHECK(t.sslcert == c.sslcert);
    CHECK(t.sslkey == c.sslkey);
    CHECK(t.password.empty());
  }
  const std::string words = "user healthcheck: client certificate /etc/dbcheck/hc.crt";
  CHECK(r.auth == words);
  CHECK_THAT(core::render_text(r), dbcheck_test::Contains("  auth           " + words + "\n"));
  CHECK_THAT(core::render_json(r), dbcheck_test::Contains("\"auth\": \"" + words + "\""));
  CHECK(core::render_text(r).find("hc.key") == std::string::npos);

  c.password_file = "/etc/dbcheck/pg.password";
  CHECK(probe::check_postgres(c, backend(config::Role::primary), k_leader,
                              probe::Deadline::in(util::Duration{10000}), f)
            .auth == words + ", password from /etc/dbcheck/pg.password");
  REQUIRE(testing::settled(f));
  CHECK(check(f, config::Role::primary, k_leader).auth ==
        "user healthcheck: no certificate, no password (only pg_hba's trust lets it in)");
}
