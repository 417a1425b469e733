#include "write_probe.hpp"

#include <util/format.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace dbcheck::probe {

tl::expected<void, core::ProbeError> probe_write(PgPeer& session, const std::string& peer,
                                                 const Deadline& deadline, Peers& peers,
                                                 core::Report& report) {
  core::Step step{"write_probe", peer,
                  util::format("BEGIN; SET LOCAL lock_timeout; {}; {}; ROLLBACK",
                               k_write_probe_truncate, k_write_probe_insert),
                  "", 0};
  const auto t0 = peers.now();
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.at() - t0);
  tl::expected<void, core::ProbeError> outcome;
  if (left.count() <= 0) {
    outcome = tl::make_unexpected(core::ProbeError{
        core::Failure::timeout, "the write probe did not start before the deadline", ""});
  } else {
    const std::vector<std::string> statements = {
        "BEGIN",
        // Three quarters of the time left: the server gives up first and says why (55P03),
        // leaving the session usable, where the client's own deadline would only say "no
        // answer".
        util::format("SET LOCAL lock_timeout = '{}ms'",
                     std::max<long long>(1, left.count() * 3 / 4)),
        k_write_probe_truncate,
        k_write_probe_insert,
        "ROLLBACK",
    };
    for (const auto& sql : statements) {
      if (auto done = session.query(sql, deadline); !done) {
        outcome = tl::make_unexpected(done.error());
        // The transaction is aborted: end it, so a kept session (the agent's) is usable
        // again. Nothing was committed either way.
        (void)session.query("ROLLBACK", deadline);
        break;
      }
    }
  }
  step.latency_ms = elapsed_ms(t0, peers.now());
  step.answer = outcome ? "extended a table by one page, rolled back" : outcome.error().detail;
  report.steps.push_back(std::move(step));
  return outcome;
}

} // namespace dbcheck::probe
