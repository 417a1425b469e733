// Which cluster a PostgreSQL node belongs to: its system identifier against the cluster's
// (core/pg_identity.hpp).
#include "dbcheck_catch.hpp"

#include <core/pg_identity.hpp>

using namespace dbcheck::core;

TEST_CASE("system identifiers from pg_controldata's text and from SQL's bigint",
          "[core][pg][identity]") {
  CHECK(parse_system_id("7412345678901234567") == 7412345678901234567ULL);
  // Past 2038 the creation time's high bit makes the bigint negative: the same 64 bits.
  CHECK(parse_system_id("-1") == 18446744073709551615ULL);
  CHECK(parse_system_id("-9223372036854775808") == 9223372036854775808ULL);
  CHECK(parse_system_id("18446744073709551615") == 18446744073709551615ULL);
  for (const char* bad : {"", "0", "-0", "x", "12x", " 12", "+12", "18446744073709551616",
                          "-9223372036854775809", "1.5"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_system_id(bad));
  }
}

TEST_CASE("a different identifier is another cluster; an unknown one is not checked",
          "[core][pg][identity]") {
  const std::optional<SystemId> ours = 7412345678901234567ULL;
  const std::optional<SystemId> theirs = 7398765432109876543ULL;
  CHECK_FALSE(identity_mismatch(ours, ours, "Patroni"));
  CHECK_FALSE(identity_mismatch(std::nullopt, ours, "Patroni"));
  CHECK_FALSE(identity_mismatch(theirs, std::nullopt, "Patroni"));
  CHECK(identity_mismatch(theirs, ours, "Patroni") ==
        "identity: PostgreSQL's system identifier 7398765432109876543 is not the cluster's "
        "7412345678901234567 that Patroni reports: this server line points at another cluster's "
        "node (or a data directory restored from another cluster)");

  CHECK(identity_unchecked(ours, ours, "x").empty());
  CHECK(identity_unchecked(std::nullopt, ours, "x") ==
        "identity not checked: pg_control_system() did not answer (revoked from the check user? "
        "GRANT EXECUTE ON FUNCTION pg_catalog.pg_control_system() TO it)");
  CHECK(identity_unchecked(ours, std::nullopt, "Patroni reports none") ==
        "identity not checked: Patroni reports none");
}
