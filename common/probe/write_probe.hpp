#pragma once
// The opt-in write probe of a PostgreSQL writer (write_probe = true): can the node extend a
// table, asked on the writer query's own session and rolled back.

#include "deadline.hpp"
#include "peers.hpp"

#include <core/probe_error.hpp>
#include <core/report.hpp>

#include <tl/expected.hpp>

namespace dbcheck::probe {

// The statements, in order. TRUNCATE gives the table a new, empty file; the INSERT extends it
// by one page (53100 when the disk is full, where an UPDATE of the row would fit in its page
// and pass); ROLLBACK unlinks the new file and commits nothing. lock_timeout is set to three
// quarters of the time left, so probes of several HAProxies queue behind each other's exclusive
// lock within the deadline and never past it.
inline constexpr const char* k_write_probe_truncate = "TRUNCATE dbcheck.write_probe";
inline constexpr const char* k_write_probe_insert =
    "INSERT INTO dbcheck.write_probe (checked_at) VALUES (now())";

// --- Interface ---

// Runs the write probe on `session` (already open, out of recovery and read-write) by
// `deadline`: nothing committed whatever happens (a failed statement is followed by ROLLBACK).
// Appends one step to `report`. Returns nothing on success, or the classified error of the
// first statement that failed (53100: unwritable; 42P01 / 42501: the setup is missing).
tl::expected<void, core::ProbeError> probe_write(PgPeer& session, const std::string& peer,
                                                 const Deadline& deadline, Peers& peers,
                                                 core::Report& report);

} // namespace dbcheck::probe
