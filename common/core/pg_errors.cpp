#include "pg_errors.hpp"

#include <util/format.hpp>

#include <array>
#include <utility>

namespace dbcheck::core {
namespace {

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

struct Pattern {
  std::string_view text;
  Failure kind;
  std::string_view sqlstate;
};

// Server texts of PostgreSQL 12-17 (src/backend, checked against the 15.18 binary).
constexpr std::array k_connect_patterns = {
    // libpq's own TLS verdicts (sslmode verify-ca / verify-full), first: "root certificate
    // file ... does not exist" must not read as a missing role. A server whose certificate the
    // CA does not vouch for, or names another host: a trust problem, not the network.
    Pattern{"root certificate file", Failure::config, ""},
    // Our client certificate or key, unusable to libpq (checked at load, so changed since).
    Pattern{"certificate file", Failure::config, ""},
    Pattern{"private key file", Failure::config, ""},
    Pattern{"certificate verify failed", Failure::auth, ""},
    Pattern{"does not match host name", Failure::auth, ""},
    // The server refusing our client certificate: during the TLS handshake (a CA it does not
    // trust, expired), or pg_hba's cert method (no certificate, or its CN is another user).
    Pattern{"alert unknown ca", Failure::auth, ""},
    Pattern{"alert bad certificate", Failure::auth, ""},
    Pattern{"alert certificate expired", Failure::auth, ""},
    Pattern{"alert certificate unknown", Failure::auth, ""},
    Pattern{"certificate authentication failed", Failure::auth, "28000"},
    Pattern{"requires a valid client certificate", Failure::auth, "28000"},
    Pattern{"sorry, too many clients already", Failure::saturated, "53300"},
    Pattern{"remaining connection slots are reserved", Failure::saturated, "53300"},
    // The check role's own CONNECTION LIMIT: checks pile up, the server is not full.
    Pattern{"too many connections for role", Failure::config, "53300"},
    Pattern{"too many connections for database", Failure::saturated, "53300"},
    Pattern{"the database system is starting up", Failure::not_ready, "57P03"},
    Pattern{"the database system is shutting down", Failure::not_ready, "57P03"},
    Pattern{"the database system is in recovery mode", Failure::not_ready, "57P03"},
    Pattern{"the database system is not yet accepting connections", Failure::not_ready, "57P03"},
    Pattern{"the database system is not accepting connections", Failure::not_ready, "57P03"},
    Pattern{"password authentication failed", Failure::auth, "28P01"},
    Pattern{"no pg_hba.conf entry", Failure::auth, "28000"},
    Pattern{"pg_hba.conf rejects connection", Failure::auth, "28000"},
    Pattern{"no password supplied", Failure::auth, "28P01"},
    Pattern{"database \"", Failure::config, "3D000"},  // ... does not exist (the only FATAL)
    Pattern{"does not exist", Failure::auth, "28000"}, // role "..." does not exist
    Pattern{"is not permitted to log in", Failure::auth, "28000"},
    Pattern{"timeout expired", Failure::timeout, ""},
    // A session that had to write a file at start (the relcache init file) on a full disk.
    Pattern{"No space left on device", Failure::unwritable, ""},
};

// The server's texts for a full disk, when no SQLSTATE came with them: md.c's "could not
// extend file" (the 53100 an INSERT meets) and the OS's ENOSPC text any write can end in.
bool says_disk_full(std::string_view message) {
  return contains(message, "could not extend file") || contains(message, "No space left on device");
}

// The server's first line without its severity: "ERROR:  could not extend file ...\nHINT: ..."
// becomes "could not extend file ...": the hint ("Check free disk space.") repeats the class.
std::string first_sentence(std::string_view message) {
  for (std::string_view severity : {"ERROR:", "FATAL:", "PANIC:"}) {
    if (message.substr(0, severity.size()) == severity) {
      message.remove_prefix(severity.size());
      break;
    }
  }
  if (const auto end = message.find('\n'); end != std::string_view::npos) {
    message = message.substr(0, end);
  }
  return one_line(message);
}

} // namespace

std::string one_line(std::string_view msg) {
  // libpq: 'connection to server at "10.0.0.1", port 5432 failed: FATAL:  sorry, ...\n'
  if (const auto pos = msg.find(" failed: ");
      pos != std::string_view::npos && msg.substr(0, 10) == "connection") {
    msg.remove_prefix(pos + 9);
  }
  // Whitespace runs become one space; a line break after a sentence without its own
  // punctuation becomes "; " so separate libpq lines stay readable on one line.
  std::string out;
  bool pending_space = false;
  bool pending_break = false;
  for (char c : msg) {
    if (static_cast<unsigned char>(c) < 0x20 || c == ' ' || c == 0x7f) {
      pending_space = !out.empty();
      pending_break = pending_break || ((c == '\n' || c == '\r') && !out.empty());
      // Other control characters from a peer become spaces too: one line, nothing to a terminal.
      continue;
    }
    if (pending_space) {
      const char last = out.back();
      out += pending_break && last != ':' && last != '.' && last != ';' && last != ',' ? "; " : " ";
      pending_space = false;
      pending_break = false;
    }
    out += c;
  }
  return out;
}

ProbeError classify_pg_connect_error(std::string_view libpq_message) {
  const std::string detail = one_line(libpq_message);
  for (const Pattern& p : k_connect_patterns) {
    if (contains(libpq_message, p.text)) {
      const std::string code = p.sqlstate.empty() ? "" : util::format("{}: ", p.sqlstate);
      return {p.kind, util::format("{}{}", code, detail), std::string{p.sqlstate}};
    }
  }
  return {Failure::network, detail, ""};
}

ProbeError classify_pg_query_error(std::string_view sqlstate, std::string_view message) {
  // 53100 disk_full: the node answers, but a write that must extend a file fails. Named in
  // words an operator acts on, with the server's own text (the file, the OS's reason).
  if (sqlstate == "53100" || (sqlstate.empty() && says_disk_full(message))) {
    return {Failure::unwritable, util::format("disk full: {}", first_sentence(message)),
            std::string{sqlstate}};
  }
  const std::string detail = util::format("{}: {}", sqlstate, one_line(message));
  Failure kind = Failure::protocol;
  if (sqlstate == "57014" || sqlstate == "55P03") {
    // statement_timeout, or the write probe's lock_timeout: the server gave up within our
    // deadline
    kind = Failure::timeout;
  } else if (sqlstate == "53300") {
    kind = Failure::saturated;
  } else if (sqlstate == "57P01" || sqlstate == "57P02" || sqlstate == "57P03") {
    kind = Failure::not_ready;
  } else if (sqlstate.substr(0, 2) == "28") {
    kind = Failure::auth;
  } else if (sqlstate == "42501") {
    kind = Failure::config; // insufficient privilege: the check role lacks a grant
  } else if (sqlstate.substr(0, 2) == "08") {
    kind = Failure::network;
  }
  return {kind, detail, std::string{sqlstate}};
}

} // namespace dbcheck::core
