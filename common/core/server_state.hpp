#pragma once
// An HAProxy server-state file (the format of `show servers state`, version 1) that starts a
// freshly started HAProxy with dbcheck's servers UP or DOWN as dbcheck decided, instead of all
// UP, and keeps everything else of HAProxy's own last dump: other servers' lines whole, and
// every server's admin state (MAINT, DRAIN), weight and disabled checks.

#include <tl/expected.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dbcheck::core {

// One of dbcheck's servers and its starting state.
struct ServerStart {
  std::string backend;
  std::string server;
  std::uint16_t port = 0; // as in HAProxy's configuration (the file sets it; it must agree)
  bool up = false;
};

// A server-state file read back: each data line as written, and its fields (split on blanks
// as HAProxy splits them). Comment and empty lines are not kept: HAProxy ignores them.
struct SavedState {
  struct Line {
    std::string text;
    std::vector<std::string> fields;
  };
  std::vector<Line> lines;
};

// --- Interface ---

// The data lines of `text`, a version-1 server-state file ("" is a file with no line: HAProxy
// had not saved one). An error says why it is not one: its first line is not "1" (another
// version, or not a state file at all), which dbcheck must not overwrite, knowing nothing of it.
tl::expected<SavedState, std::string> parse_server_state(std::string_view text);

// The file's text: "1", the field names, then `saved`'s lines in their order, each line of one
// of `servers` replaced by dbcheck's, then dbcheck's lines that `saved` had none for. A line of
// dbcheck's sets the operational state (RUNNING or STOPPED; HAProxy's checks take over from
// there) and takes from the saved line, when there is one, the admin state, the weights and
// the check and agent states ("disable health" stays disabled); without one, admin state 0 (the
// configuration's) and a weight HAProxy applies only where the configuration's is already 256
// (the same value). The address is never set ("-"): HAProxy keeps the configuration's, the one
// dbcheck checked. Lines are matched by backend and server name:
// load it with `load-server-state-from-file global`.
std::string render_server_state(const SavedState& saved, const std::vector<ServerStart>& servers);

// What `saved` says of backend/server's admin state, in an operator's words: "MAINT", "DRAIN",
// "MAINT, DRAIN", or "" (ready, or no line for it).
std::string saved_admin_state(const SavedState& saved, std::string_view backend,
                              std::string_view server);

} // namespace dbcheck::core
