#pragma once
// The last syslog line each server's check wrote, kept between checks (each check is a new
// process) as a small file in a directory only this user can reach; core/pass_log decides
// from it whether a pass is logged.

#include <core/pass_log.hpp>

#include <optional>
#include <string>

namespace dbcheck::extcheck {

// --- Interface ---

// The directory `configured` names (log.state_dir); none: /tmp/dbcheck-log-<euid>.
std::string last_logged_dir(const std::optional<std::string>& configured);

// One server's record, held locked (flock) against the other checks of the same server while
// the check decides and logs, so that the file always describes the last line written.
class LastLogged {
public:
  // Opens and locks (backend, node)'s record in `dir` (created 0700 when missing). Unusable
  // when the directory or a file is not safely this user's (another owner, open to group or
  // others, a symbolic link), or another check of the server holds the lock: then its line
  // is simply logged. Never throws.
  LastLogged(const std::string& dir, const std::string& backend, const std::string& node);
  ~LastLogged();
  LastLogged(const LastLogged&) = delete;
  LastLogged& operator=(const LastLogged&) = delete;

  // The line last logged for this server; nullopt when unusable, none yet, or the file is not
  // one this code wrote for this very server (corrupt, too large, another's).
  std::optional<core::LoggedLine> read() const;

  // Records `line` as the last one logged, replacing the file in one step (rename); does
  // nothing when unusable.
  void write(const core::LoggedLine& line) const;

  // Removes the record, lock or no lock: called before a failure is logged, so that a record
  // which then cannot be written (a full disk, the check killed, another check holding the
  // lock) leaves nothing known and the recovery's pass is logged, never hidden behind an
  // older pass. Unlinking needs no free space.
  void forget() const;

private:
  std::string m_backend;
  std::string m_node;
  std::string m_key;
  int m_dir = -1;
  int m_lock = -1;
};

} // namespace dbcheck::extcheck
