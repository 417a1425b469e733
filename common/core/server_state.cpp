#include "server_state.hpp"

#include <fmt/format.h>

namespace dbcheck::core {
namespace {

// HAProxy's enum srv_state (server-t.h).
constexpr int k_stopped = 0;
constexpr int k_running = 2;
// The weight field's largest value (SRV_UWGHT_MAX): HAProxy applies srv_uweight only when
// srv_iweight equals the configured weight, so 256 changes no weight but a 256 (to 256).
constexpr int k_weight = 256;
// srv_check_status: HCHK_STATUS_INI, "initializing", as before a first check. Not 0
// (HCHK_STATUS_UNKNOWN): HAProxy 2.6.12 then never runs that server's checks (measured: a
// server loaded with it stayed UP, status UNK, for 35 s against a closed port).
constexpr int k_check_initializing = 1;

} // namespace

std::string render_server_state(const std::vector<ServerStart>& servers) {
  // The 20 fields every version-1 reader takes (HAProxy 1.6 to 3.x); the optional five after
  // srvrecord (ssl, check and agent addresses) are left out, so none is applied.
  std::string out =
      "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight "
      "srv_iweight srv_time_since_last_change srv_check_status srv_check_result "
      "srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id "
      "srv_fqdn srv_port srvrecord\n";
  for (const auto& s : servers) {
    // be_id and srv_id 0: a global state file is matched by names alone. srv_addr and
    // srv_fqdn "-": not applied. Admin state 0: the configuration's (a server `disabled`
    // there stays in maintenance).
    out += fmt::format("0 {} 0 {} - {} 0 {} {} 0 {} 0 0 0 0 0 0 - {} -\n", s.backend, s.server,
                       s.up ? k_running : k_stopped, k_weight, k_weight, k_check_initializing,
                       s.port);
  }
  return out;
}

} // namespace dbcheck::core
