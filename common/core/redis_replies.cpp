#include "redis_replies.hpp"

#include <util/format.hpp>

#include <charconv>

namespace dbcheck::core {
namespace {

bool has_flag(const std::string& flags, std::string_view flag) {
  std::size_t start = 0;
  while (start <= flags.size()) {
    const std::size_t comma = flags.find(',', start);
    const std::size_t end = comma == std::string::npos ? flags.size() : comma;
    if (std::string_view{flags}.substr(start, end - start) == flag) {
      return true;
    }
    if (comma == std::string::npos) {
      break;
    }
    start = comma + 1;
  }
  return false;
}

tl::unexpected<ProbeError> malformed(std::string_view what) {
  return tl::make_unexpected(ProbeError{Failure::protocol, util::format("malformed {}", what), ""});
}

bool is_text(const RespValue& v) {
  return v.type == RespValue::Type::string || v.type == RespValue::Type::status;
}

std::optional<long long> to_integer(const RespValue& v) {
  if (v.type == RespValue::Type::integer) {
    return v.integer;
  }
  if (!is_text(v)) {
    return std::nullopt;
  }
  long long n = 0;
  const auto [end, ec] = std::from_chars(v.str.data(), v.str.data() + v.str.size(), n);
  if (ec != std::errc{} || end != v.str.data() + v.str.size() || v.str.empty()) {
    return std::nullopt;
  }
  return n;
}

std::optional<util::HostPort> to_address(const RespValue& host, const RespValue& port) {
  const auto p = to_integer(port);
  if (!is_text(host) || host.str.empty() || !p || *p <= 0 || *p > 65535) {
    return std::nullopt;
  }
  return util::HostPort{host.str, static_cast<std::uint16_t>(*p)};
}

} // namespace

bool SentinelView::unsettled() const {
  return has_flag(flags, "o_down") || failing_over();
}

bool SentinelView::failing_over() const {
  return has_flag(flags, "failover_in_progress");
}

bool SentinelView::has(std::string_view flag) const {
  return has_flag(flags, flag);
}

ProbeError classify_redis_error(const std::string& message) {
  const auto starts = [&](std::string_view p) { return message.rfind(p, 0) == 0; };
  Failure kind = Failure::protocol;
  if (starts("NOAUTH") || starts("WRONGPASS") || starts("NOPERM") ||
      message.find("invalid password") != std::string::npos) {
    kind = Failure::auth;
  } else if (starts("LOADING") || starts("MASTERDOWN") || starts("BUSY")) {
    kind = Failure::not_ready;
  } else if (message.find("max number of clients reached") != std::string::npos) {
    kind = Failure::saturated;
  } else if (starts("MISCONF") || starts("OOM") || starts("NOREPLICAS")) {
    // Redis's gates that refuse every write: a failed save (stop-writes-on-bgsave-error),
    // maxmemory under noeviction, min-replicas-to-write unmet.
    kind = Failure::unwritable;
  }
  // Redis leads an error with its code in capitals ("MISCONF ...", "ERR ...").
  const std::string code = message.substr(0, message.find(' '));
  const bool is_code =
      !code.empty() && code.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") == std::string::npos;
  return ProbeError{kind, message, is_code ? code : ""};
}

WriteProbe parse_write_probe(const RespValue& r) {
  if (r.type == RespValue::Type::integer) {
    return {WriteProbe::Outcome::accepted, ""};
  }
  if (r.type != RespValue::Type::error) {
    return {WriteProbe::Outcome::unknown, "an answer that is neither a count nor an error"};
  }
  if (r.str.rfind("WRONGTYPE", 0) == 0) {
    return {WriteProbe::Outcome::accepted, ""};
  }
  const ProbeError e = classify_redis_error(r.str);
  return {e.kind == Failure::unwritable ? WriteProbe::Outcome::refused
                                        : WriteProbe::Outcome::unknown,
          r.str};
}

tl::expected<RedisRole, ProbeError> parse_role(const RespValue& r) {
  if (r.type == RespValue::Type::error) {
    return tl::make_unexpected(classify_redis_error(r.str));
  }
  if (r.type != RespValue::Type::array || r.elements.empty() || !is_text(r.elements[0])) {
    return malformed("ROLE reply");
  }
  const std::string& kind = r.elements[0].str;
  RedisRole role;
  if (kind == "master") {
    const auto offset = r.elements.size() >= 2 ? to_integer(r.elements[1]) : std::nullopt;
    if (!offset) {
      return malformed("ROLE reply (master without an offset)");
    }
    role.master = true;
    role.offset = *offset;
    return role;
  }
  if (kind == "slave" || kind == "replica") {
    if (r.elements.size() < 5) {
      return malformed("ROLE reply (replica with fewer than 5 fields)");
    }
    const auto addr = to_address(r.elements[1], r.elements[2]);
    const auto offset = to_integer(r.elements[4]);
    if (!addr || !is_text(r.elements[3]) || !offset) {
      return malformed("ROLE reply (replica fields)");
    }
    role.master_addr = *addr;
    role.link_state = r.elements[3].str;
    role.offset = *offset;
    return role;
  }
  return tl::make_unexpected(
      ProbeError{Failure::protocol, util::format("ROLE says \"{}\": not a data node", kind), ""});
}

tl::expected<void, ProbeError> parse_ping(const RespValue& r) {
  if (r.type == RespValue::Type::error) {
    return tl::make_unexpected(classify_redis_error(r.str));
  }
  if (is_text(r) && r.str == "PONG") {
    return {};
  }
  return malformed("PING reply");
}

tl::expected<std::optional<util::HostPort>, ProbeError> parse_master_addr(const RespValue& r) {
  if (r.type == RespValue::Type::error) {
    return tl::make_unexpected(classify_redis_error(r.str));
  }
  if (r.type == RespValue::Type::nil) {
    return std::optional<util::HostPort>{};
  }
  if (r.type != RespValue::Type::array || r.elements.size() != 2) {
    return malformed("GET-MASTER-ADDR-BY-NAME reply");
  }
  const auto addr = to_address(r.elements[0], r.elements[1]);
  if (!addr) {
    return malformed("GET-MASTER-ADDR-BY-NAME reply (host/port)");
  }
  return std::optional<util::HostPort>{*addr};
}

tl::expected<SentinelView, ProbeError> parse_sentinel_master(const RespValue& r) {
  if (r.type == RespValue::Type::error) {
    return tl::make_unexpected(classify_redis_error(r.str));
  }
  if (r.type != RespValue::Type::array || r.elements.size() % 2 != 0) {
    return malformed("SENTINEL MASTER reply");
  }
  SentinelView view;
  bool have_flags = false;
  for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2) {
    const RespValue& field = r.elements[i];
    const RespValue& value = r.elements[i + 1];
    if (!is_text(field)) {
      return malformed("SENTINEL MASTER reply (field name)");
    }
    if (field.str == "flags" && is_text(value)) {
      view.flags = value.str;
      have_flags = true;
    } else if (field.str == "config-epoch") {
      view.config_epoch = to_integer(value);
    } else if (field.str == "role-reported" && is_text(value)) {
      view.role_reported = value.str;
    } else if (field.str == "info-refresh") {
      view.info_refresh_ms = to_integer(value);
    }
  }
  if (!have_flags) {
    return malformed("SENTINEL MASTER reply (no flags)");
  }
  return view;
}

std::string describe(const RedisRole& role) {
  if (role.master) {
    return util::format("master, offset {}", role.offset);
  }
  return util::format("replica of {} ({}), offset {}", util::to_string(role.master_addr),
                      role.link_state, role.offset);
}

std::string summarize(const RedisRole& role) {
  if (role.master) {
    return "master";
  }
  return util::format("replica of {}, link {}", util::to_string(role.master_addr), role.link_state);
}

std::vector<SentinelReplica> parse_sentinel_replicas(const RespValue& reply) {
  std::vector<SentinelReplica> out;
  for (const auto& entry : reply.elements) {
    SentinelReplica r;
    std::string ip;
    std::string port;
    for (std::size_t i = 0; i + 1 < entry.elements.size(); i += 2) {
      const std::string& k = entry.elements[i].str;
      const std::string& v = entry.elements[i + 1].str;
      if (k == "ip") {
        ip = v;
      } else if (k == "port") {
        port = v;
      } else if (k == "flags") {
        r.flags = v;
      } else if (k == "master-link-status") {
        r.link = v;
      }
    }
    if (auto hp = util::parse_host_port(ip + ":" + port)) {
      r.addr = *hp;
      out.push_back(std::move(r));
    }
  }
  return out;
}

bool replica_healthy(const SentinelReplica& r) {
  return r.link == "ok" && r.flags.find("down") == std::string::npos &&
         r.flags.find("disconnected") == std::string::npos;
}

} // namespace dbcheck::core
