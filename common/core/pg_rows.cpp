#include "pg_rows.hpp"

#include <util/duration.hpp>
#include <util/format.hpp>

#include <charconv>
#include <cmath>

namespace dbcheck::core {
namespace {

std::optional<bool> parse_bool(const std::optional<std::string>& v) {
  if (v == "t" || v == "on") {
    return true;
  }
  if (v == "f" || v == "off") {
    return false;
  }
  return std::nullopt;
}

ProbeError bad_rows(std::string_view what) {
  return ProbeError{Failure::protocol, util::format("unexpected answer to {}", what), ""};
}

// A finite number, or nullopt for anything else ("nan", "inf", "12abc", "", NULL).
std::optional<double> parse_finite(const std::optional<std::string>& text) {
  if (!text) {
    return std::nullopt;
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc{} || end != text->data() + text->size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

// A timeline from the first 8 hex digits of a WAL file name ("00000003").
std::optional<std::uint32_t> parse_timeline(const std::optional<std::string>& hex) {
  if (!hex || hex->size() != 8) {
    return std::nullopt;
  }
  std::uint32_t v = 0;
  const auto [end, ec] = std::from_chars(hex->data(), hex->data() + hex->size(), v, 16);
  if (ec != std::errc{} || end != hex->data() + hex->size() || v == 0) {
    return std::nullopt;
  }
  return v;
}

// Replay LSN and last-replay age from two columns; NULL stays nullopt, garbage is an error.
tl::expected<ReplayPosition, ProbeError> parse_position(const std::optional<std::string>& lsn,
                                                        const std::optional<std::string>& age) {
  ReplayPosition p;
  if (lsn) {
    p.replay = parse_lsn(*lsn);
    if (!p.replay) {
      return tl::make_unexpected(bad_rows("pg_last_wal_replay_lsn()"));
    }
  }
  if (age) {
    p.since_last_replay_s = parse_finite(age);
    if (!p.since_last_replay_s) {
      return tl::make_unexpected(bad_rows("pg_last_xact_replay_timestamp()"));
    }
  }
  return p;
}

// ", system_identifier=N" for a report; nothing when it was not read (the verdict says so).
std::string identity_words(const std::optional<SystemId>& id) {
  return id ? util::format(", system_identifier={}", *id) : std::string{};
}

bool one_row_of(const std::vector<PgRow>& rows, std::size_t columns) {
  return rows.size() == 1 && rows[0].size() == columns;
}

// One row of `columns`, or of one more: the identifier's (k_identity_column).
bool one_row_of_either(const std::vector<PgRow>& rows, std::size_t columns) {
  return one_row_of(rows, columns) || one_row_of(rows, columns + 1);
}

// The identifier in column `at`, when the row has one; NULL or garbage is an error naming it.
tl::expected<std::optional<SystemId>, ProbeError> parse_identity(const PgRow& row, std::size_t at) {
  if (row.size() <= at) {
    return std::optional<SystemId>{}; // asked without_identity()
  }
  const auto id = row[at] ? parse_system_id(*row[at]) : std::nullopt;
  if (!id) {
    return tl::make_unexpected(bad_rows("pg_control_system().system_identifier"));
  }
  return id;
}

} // namespace

std::string without_identity(std::string_view sql) {
  if (sql.ends_with(k_identity_column)) {
    sql.remove_suffix(k_identity_column.size());
  }
  return std::string{sql};
}

bool identity_unreadable(const ProbeError& error) {
  const auto says = [&](std::string_view words) {
    return error.detail.find(words) != std::string::npos;
  };
  return (error.code == "42501" && says("pg_control_system")) ||
         (error.code == "XX000" &&
          says("calculated CRC checksum does not match value stored in file"));
}

tl::expected<NodeRole, ProbeError> parse_writer_rows(const std::vector<PgRow>& rows) {
  if (!one_row_of_either(rows, 4)) {
    return tl::make_unexpected(bad_rows("the writer query"));
  }
  const auto in_recovery = parse_bool(rows[0][0]);
  const auto read_only = parse_bool(rows[0][1]);
  const auto used = parse_finite(rows[0][2]);
  const auto limit = parse_finite(rows[0][3]);
  if (!in_recovery || !read_only || !used || !limit) {
    return tl::make_unexpected(bad_rows("the writer query"));
  }
  auto id = parse_identity(rows[0], 4);
  if (!id) {
    return tl::make_unexpected(id.error());
  }
  return NodeRole{*in_recovery, *read_only, static_cast<int>(*used), static_cast<int>(*limit), *id};
}

tl::expected<WalSample, ProbeError> parse_sample_rows(const std::vector<PgRow>& rows) {
  const auto lsn = one_row_of_either(rows, 2) && rows[0][0] ? parse_lsn(*rows[0][0]) : std::nullopt;
  const auto tli = lsn ? parse_timeline(rows[0][1]) : std::nullopt;
  if (!lsn || !tli) {
    return tl::make_unexpected(bad_rows(k_sample_sql));
  }
  auto id = parse_identity(rows[0], 2);
  if (!id) {
    return tl::make_unexpected(id.error());
  }
  return WalSample{*lsn, *tli, *id};
}

tl::expected<ReplicaRow, ProbeError> parse_replica_rows(const std::vector<PgRow>& rows) {
  const auto in_recovery = one_row_of_either(rows, 7) ? parse_bool(rows[0][0]) : std::nullopt;
  const auto receiver = in_recovery ? parse_bool(rows[0][1]) : std::nullopt;
  const auto paused = receiver ? parse_bool(rows[0][3]) : std::nullopt;
  if (!paused) {
    return tl::make_unexpected(bad_rows("the replica query"));
  }
  const PgRow& row = rows[0];
  auto position = parse_position(row[4], row[5]);
  if (!position) {
    return tl::make_unexpected(position.error());
  }
  ReplicaRow r;
  r.status.in_recovery = *in_recovery;
  r.status.receiver_present = *receiver;
  r.status.receiver_status = row[2];
  r.status.replay_paused = *paused;
  if (row[6]) {
    const auto tli = parse_finite(row[6]);
    if (!tli) {
      return tl::make_unexpected(bad_rows("pg_stat_wal_receiver.received_tli"));
    }
    r.status.received_timeline = static_cast<std::uint32_t>(*tli);
  }
  auto id = parse_identity(row, 7);
  if (!id) {
    return tl::make_unexpected(id.error());
  }
  r.status.system_id = *id;
  r.position = std::move(*position);
  return r;
}

tl::expected<ReplayPosition, ProbeError> parse_replay_rows(const std::vector<PgRow>& rows) {
  if (!one_row_of(rows, 2)) {
    return tl::make_unexpected(bad_rows(k_replay_sql));
  }
  return parse_position(rows[0][0], rows[0][1]);
}

std::string describe(const NodeRole& role) {
  return util::format("pg_is_in_recovery={}, transaction_read_only={}, connections {} of {}{}",
                      role.in_recovery ? "t" : "f", role.read_only ? "on" : "off",
                      role.connections.value_or(0), role.connection_limit.value_or(0),
                      identity_words(role.system_id));
}

std::string describe(const ReplicaStatus& st, const ReplayPosition& position, int polls) {
  return util::format(
      "in_recovery={}, wal_receiver={}, received_timeline={}, replay_paused={}, "
      "replay_lsn={}, last_replayed_commit_age={}{}{}",
      st.in_recovery ? "t" : "f",
      st.receiver_present ? st.receiver_status.value_or("(hidden)") : "none",
      st.received_timeline ? std::to_string(*st.received_timeline) : "null",
      st.replay_paused ? "t" : "f",
      position.replay ? format_lsn(*position.replay) : std::string{"null"},
      position.since_last_replay_s ? util::format_seconds(*position.since_last_replay_s) : "null",
      identity_words(st.system_id),
      polls > 1 ? util::format(" (replay polled {} times)", polls) : "");
}

std::string summarize(const NodeRole& role) {
  if (role.in_recovery) {
    return "in recovery";
  }
  return role.read_only ? "primary, read-only" : "primary, read-write";
}

std::string summarize(const ReplicaStatus& st) {
  if (!st.in_recovery) {
    return "not in recovery";
  }
  std::string out = "replica, ";
  if (!st.receiver_present) {
    out += "no WAL receiver";
  } else {
    out += st.receiver_status.value_or("receiver hidden");
    if (st.received_timeline) {
      out += util::format(", timeline {}", *st.received_timeline);
    }
  }
  return st.replay_paused ? out + ", replay paused" : out;
}

} // namespace dbcheck::core
