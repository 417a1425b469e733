// PostgreSQL's answers to dbcheck's questions, parsed (core/pg_rows.hpp).
#include "dbcheck_catch.hpp"

#include <core/pg_rows.hpp>

using namespace dbcheck::core;

TEST_CASE("the writer row", "[core][pg][rows]") {
  const auto role = parse_writer_rows({{"f", "off", "3", "47"}});
  REQUIRE(role);
  CHECK_FALSE(role->in_recovery);
  CHECK_FALSE(role->read_only);
  CHECK(role->connections == 3);
  CHECK(role->connection_limit == 47);
  CHECK(describe(*role) == "pg_is_in_recovery=f, transaction_read_only=off, connections 3 of 47");
  CHECK(parse_writer_rows({{"t", "on", "3", "47"}})->read_only);
  CHECK(summarize(*role) == "primary, read-write");
  CHECK(summarize(*parse_writer_rows({{"f", "on", "3", "47"}})) == "primary, read-only");
  CHECK(summarize(*parse_writer_rows({{"t", "on", "3", "47"}})) == "in recovery");
}

TEST_CASE("writer rows of the wrong shape or value are refused", "[core][pg][rows]") {
  const std::vector<PgRow> rows = GENERATE(
      std::vector<PgRow>{}, std::vector<PgRow>{{"f", "off", "3"}},
      std::vector<PgRow>{{"f", "off", "3", "47"}, {"f", "off", "3", "47"}},
      std::vector<PgRow>{{"yes", "off", "3", "47"}},
      std::vector<PgRow>{{"f", std::nullopt, "3", "47"}},
      std::vector<PgRow>{{"f", "off", "nan", "47"}}, std::vector<PgRow>{{"f", "off", "3", "47x"}});
  const auto r = parse_writer_rows(rows);
  REQUIRE_FALSE(r);
  CHECK(r.error().kind == Failure::protocol);
  CHECK(r.error().detail == "unexpected answer to the writer query");
}

TEST_CASE("the leader's sample", "[core][pg][rows]") {
  const auto s = parse_sample_rows({{"16/B374D848", "00000003"}});
  REQUIRE(s);
  CHECK(format_lsn(s->lsn) == "16/B374D848");
  CHECK(s->timeline == 3);
  for (const PgRow& bad : {PgRow{"16/B374D848", "0000003"}, PgRow{"16/B374D848", "00000000"},
                           PgRow{"16/B374D848", "0000000g"}, PgRow{"garbage", "00000003"},
                           PgRow{std::nullopt, "00000003"}, PgRow{"16/B374D848", std::nullopt}}) {
    CHECK_FALSE(parse_sample_rows({bad}));
  }
}

TEST_CASE("the replica row", "[core][pg][rows]") {
  auto r = parse_replica_rows({{"t", "t", "streaming", "f", "0/3000060", "0.25", "2"}});
  REQUIRE(r);
  CHECK(r->status.in_recovery);
  CHECK(r->status.receiver_present);
  CHECK(r->status.receiver_status == "streaming");
  CHECK_FALSE(r->status.replay_paused);
  CHECK(r->status.received_timeline == 2u);
  CHECK(r->position.replay == parse_lsn("0/3000060"));
  CHECK(r->position.since_last_replay_s == 0.25);
  CHECK(describe(r->status, r->position, 1) ==
        "in_recovery=t, wal_receiver=streaming, received_timeline=2, replay_paused=f, "
        "replay_lsn=0/3000060, last_replayed_commit_age=0.250s");
  CHECK(summarize(r->status) == "replica, streaming, timeline 2");

  // No receiver, nothing replayed yet: NULLs stay unknown, not zero.
  r = parse_replica_rows({{"t", "f", std::nullopt, "f", std::nullopt, std::nullopt, std::nullopt}});
  REQUIRE(r);
  CHECK_FALSE(r->status.received_timeline);
  CHECK_FALSE(r->position.replay);
  CHECK_FALSE(r->position.since_last_replay_s);
  CHECK_THAT(describe(r->status, r->position, 3),
             dbcheck_test::Contains("wal_receiver=none") &&
                 dbcheck_test::Contains("replay_lsn=null") &&
                 dbcheck_test::EndsWith("(replay polled 3 times)"));
  CHECK(summarize(r->status) == "replica, no WAL receiver");
  r = parse_replica_rows({{"t", "t", "streaming", "t", "0/3000060", "0.25", "2"}});
  REQUIRE(r);
  CHECK(summarize(r->status) == "replica, streaming, timeline 2, replay paused");
  r = parse_replica_rows({{"f", "f", std::nullopt, "f", std::nullopt, std::nullopt, std::nullopt}});
  REQUIRE(r);
  CHECK(summarize(r->status) == "not in recovery");
}

TEST_CASE("replica rows that cannot be trusted name the column", "[core][pg][rows]") {
  const auto [row, detail] = GENERATE(table<PgRow, const char*>({
      {{"t", "t", "streaming", "f", "0/3000060", "0.25"}, "unexpected answer to the replica query"},
      {{"maybe", "t", "streaming", "f", "0/3000060", "0.25", "2"},
       "unexpected answer to the replica query"},
      {{"t", "t", "streaming", "f", "0-3000060", "0.25", "2"},
       "unexpected answer to pg_last_wal_replay_lsn()"},
      {{"t", "t", "streaming", "f", "0/3000060", "inf", "2"},
       "unexpected answer to pg_last_xact_replay_timestamp()"},
      {{"t", "t", "streaming", "f", "0/3000060", "0.25", "two"},
       "unexpected answer to pg_stat_wal_receiver.received_tli"},
  }));
  const auto r = parse_replica_rows({row});
  REQUIRE_FALSE(r);
  CHECK(r.error().detail == detail);
}

TEST_CASE("the replay row while watching a catch-up", "[core][pg][rows]") {
  const auto p = parse_replay_rows({{"0/3000070", "0.01"}});
  REQUIRE(p);
  CHECK(p->replay == parse_lsn("0/3000070"));
  CHECK_FALSE(parse_replay_rows({{"0/3000070"}}));
  CHECK_FALSE(parse_replay_rows({{"0/3000070", "x"}}));
}

TEST_CASE("each question asks the system identifier last, and can be asked without it",
          "[core][pg][rows][identity]") {
  for (const char* sql : {k_writer_sql, k_sample_sql, k_replica_sql}) {
    CAPTURE(sql);
    const std::string plain = without_identity(sql);
    CHECK(plain + std::string{k_identity_column} == sql);
    CHECK(plain.find("pg_control_system") == std::string::npos);
  }
  CHECK(identity_unreadable(
      ProbeError{Failure::protocol,
                 "42501: ERROR:  permission denied for function pg_control_system", "42501"}));
  CHECK(identity_unreadable(ProbeError{
      Failure::protocol,
      "XX000: ERROR:  calculated CRC checksum does not match value stored in file", "XX000"}));
  // Another refusal is the check's failure as before: not retried.
  CHECK_FALSE(identity_unreadable(ProbeError{
      Failure::protocol, "42501: ERROR:  permission denied for view pg_stat_activity", "42501"}));
}

TEST_CASE("the identifier column: read, absent when not asked, an error when garbled",
          "[core][pg][rows][identity]") {
  const auto role = parse_writer_rows({{"f", "off", "3", "47", "7412345678901234567"}});
  REQUIRE(role);
  CHECK(role->system_id == 7412345678901234567ULL);
  CHECK(describe(*role) == "pg_is_in_recovery=f, transaction_read_only=off, connections 3 of 47, "
                           "system_identifier=7412345678901234567");
  CHECK_FALSE(parse_writer_rows({{"f", "off", "3", "47"}})->system_id);

  const auto sample = parse_sample_rows({{"16/B374D848", "00000003", "-42"}});
  REQUIRE(sample);
  CHECK(sample->system_id == static_cast<SystemId>(-42));

  const auto replica =
      parse_replica_rows({{"t", "t", "streaming", "f", "0/3000060", "0.25", "2", "99"}});
  REQUIRE(replica);
  CHECK(replica->status.system_id == 99u);
  CHECK_THAT(describe(replica->status, replica->position, 1),
             dbcheck_test::EndsWith(", system_identifier=99"));

  for (const std::optional<std::string>& bad :
       {std::optional<std::string>{}, std::optional<std::string>{"abc"},
        std::optional<std::string>{"0"}}) {
    const std::string detail = "unexpected answer to pg_control_system().system_identifier";
    CHECK(parse_writer_rows({{"f", "off", "3", "47", bad}}).error().detail == detail);
    CHECK(parse_sample_rows({{"16/B374D848", "00000003", bad}}).error().detail == detail);
    CHECK(parse_replica_rows({{"t", "t", "streaming", "f", "0/3000060", "0.25", "2", bad}})
              .error()
              .detail == detail);
  }
  CHECK_FALSE(parse_writer_rows({{"f", "off", "3", "47", "1", "2"}}));
}
