#include "server_state.hpp"

#include <util/format.hpp>

#include <algorithm>
#include <optional>

namespace dbcheck::core {
namespace {

// HAProxy's enum srv_state (server-t.h).
constexpr int k_stopped = 0;
constexpr int k_running = 2;
// The weight field's largest value (SRV_UWGHT_MAX): HAProxy applies srv_uweight only when
// srv_iweight equals the configured weight, so 256 changes no weight but a 256 (to 256).
constexpr const char* k_weight = "256";
// srv_check_status: HCHK_STATUS_INI, "initializing", as before a first check. Not 0
// (HCHK_STATUS_UNKNOWN): HAProxy 2.6.12 then never runs that server's checks (measured: a
// server loaded with it stayed UP, status UNK, for 35 s against a closed port).
constexpr int k_check_initializing = 1;

// Field positions of a version-1 line (HAProxy's srv_state_srv_update()).
constexpr std::size_t k_be_name = 1;
constexpr std::size_t k_srv_name = 3;
constexpr std::size_t k_admin_state = 6;
constexpr std::size_t k_uweight = 7;
constexpr std::size_t k_iweight = 8;
constexpr std::size_t k_check_state = 13;
constexpr std::size_t k_agent_state = 14;

// enum srv_admin (server-t.h): forced, inherited or resolution maintenance, the
// configuration's `disabled`; forced or inherited drain.
constexpr unsigned long k_admin_maint = 0x01 | 0x02 | 0x20 | 0x04;
constexpr unsigned long k_admin_drain = 0x08 | 0x10;

// The blank-separated words of `line`, as HAProxy's state-file reader splits them.
std::vector<std::string> split_fields(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) {
      ++i;
    }
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') {
      ++i;
    }
    if (i > start) {
      out.emplace_back(line.substr(start, i - start));
    }
  }
  return out;
}

// A field HAProxy reads with strtol and accepts: decimal digits only. Anything else makes it
// refuse the whole line, which would drop dbcheck's operational state with it.
bool is_number(const std::string& s) {
  return !s.empty() && s.size() <= 9 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The saved line of backend/server (the first: HAProxy ignores a repeated one), or null.
const SavedState::Line* find_line(const SavedState& saved, std::string_view backend,
                                  std::string_view server) {
  for (const auto& l : saved.lines) {
    if (l.fields.size() > k_srv_name && l.fields[k_be_name] == backend &&
        l.fields[k_srv_name] == server) {
      return &l;
    }
  }
  return nullptr;
}

// Field `i` of `line` when it is there and a number HAProxy accepts, else `fallback`.
std::string saved_or(const SavedState::Line* line, std::size_t i, const std::string& fallback) {
  if (line != nullptr && line->fields.size() > i && is_number(line->fields[i])) {
    return line->fields[i];
  }
  return fallback;
}

// dbcheck's line for `s`, carrying the operator's fields from `saved` (may be null).
std::string our_line(const ServerStart& s, const SavedState::Line* saved) {
  // be_id and srv_id 0: a global state file is matched by names alone. srv_addr and
  // srv_fqdn "-": not applied.
  return util::format("0 {} 0 {} - {} {} {} {} 0 {} 0 0 {} {} 0 0 - {} -", s.backend, s.server,
                      s.up ? k_running : k_stopped, saved_or(saved, k_admin_state, "0"),
                      saved_or(saved, k_uweight, k_weight), saved_or(saved, k_iweight, k_weight),
                      k_check_initializing, saved_or(saved, k_check_state, "0"),
                      saved_or(saved, k_agent_state, "0"), s.port);
}

} // namespace

tl::expected<SavedState, std::string> parse_server_state(std::string_view text) {
  SavedState out;
  bool version_seen = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    const auto fields = split_fields(line);
    if (!version_seen) {
      if (fields.empty()) {
        continue;
      }
      if (fields.size() != 1 || fields[0] != "1") {
        // Not quoted: the path may lead anywhere (a link to a secret), and this goes to a log.
        return tl::make_unexpected(
            std::string{"its first line is not \"1\": not a version-1 server-state file"});
      }
      version_seen = true;
      continue;
    }
    if (fields.empty() || fields[0][0] == '#') {
      continue;
    }
    out.lines.push_back({std::string(line), fields});
  }
  return out;
}

std::string render_server_state(const SavedState& saved, const std::vector<ServerStart>& servers) {
  // The 20 fields every version-1 reader takes (HAProxy 1.6 to 3.x); the optional five after
  // srvrecord (ssl, check and agent addresses) are left out of dbcheck's lines, so none is
  // applied. A saved line of another server keeps all of its own.
  std::string out =
      "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight "
      "srv_iweight srv_time_since_last_change srv_check_status srv_check_result "
      "srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id "
      "srv_fqdn srv_port srvrecord\n";
  std::vector<bool> written(servers.size(), false);
  for (const auto& l : saved.lines) {
    std::optional<std::size_t> ours;
    if (l.fields.size() > k_srv_name) {
      for (std::size_t i = 0; i < servers.size() && !ours; ++i) {
        if (!written[i] && servers[i].backend == l.fields[k_be_name] &&
            servers[i].server == l.fields[k_srv_name]) {
          ours = i;
        }
      }
    }
    if (ours) {
      out += our_line(servers[*ours], &l) + '\n';
      written[*ours] = true;
    } else {
      out += l.text + '\n';
    }
  }
  for (std::size_t i = 0; i < servers.size(); ++i) {
    if (!written[i]) {
      out += our_line(servers[i], nullptr) + '\n'; // no saved line: the configuration's
    }
  }
  return out;
}

std::string saved_admin_state(const SavedState& saved, std::string_view backend,
                              std::string_view server) {
  const std::string field = saved_or(find_line(saved, backend, server), k_admin_state, "0");
  const unsigned long admin = std::stoul(field);
  const bool maint = (admin & k_admin_maint) != 0;
  const bool drain = (admin & k_admin_drain) != 0;
  return maint && drain ? "MAINT, DRAIN" : maint ? "MAINT" : drain ? "DRAIN" : "";
}

} // namespace dbcheck::core
