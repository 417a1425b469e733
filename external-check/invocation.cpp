#include "invocation.hpp"

#include <config/load_config.hpp>
#include <util/format.hpp>

namespace dbcheck::extcheck {

tl::expected<Target, std::string> haproxy_target(const std::vector<std::string>& args,
                                                 const Env& env) {
  if (args.size() != 4) {
    return tl::make_unexpected(
        util::format("expected 4 arguments from HAProxy (<proxy_addr> <proxy_port> <server_addr> "
                     "<server_port>), got {}; for manual use run: dbcheck check BACKEND HOST:PORT",
                     args.size()));
  }
  const auto name = env.find("HAPROXY_PROXY_NAME");
  if (name == env.end() || name->second.empty()) {
    return tl::make_unexpected(std::string{
        "HAPROXY_PROXY_NAME is not set: dbcheck was not started by HAProxy's external-check; "
        "for manual use run: dbcheck check BACKEND HOST:PORT"});
  }
  const std::string& addr = args[2];
  if (addr == "NOT_USED" || addr.empty() || addr.front() == '/') {
    return tl::make_unexpected(util::format(
        "server address \"{}\" is not an IP address (UNIX-socket servers are not supported)",
        addr));
  }
  auto port = util::parse_port(args[3]);
  if (!port) {
    return tl::make_unexpected(util::format("server port: {}", port.error()));
  }
  return Target{name->second, util::HostPort{addr, *port}};
}

bool shaped_like_haproxy(const std::vector<std::string>& args, const Env& env) {
  const auto name = env.find("HAPROXY_PROXY_NAME");
  return args.size() == 4 && name != env.end() && !name->second.empty();
}

tl::expected<Target, std::string> manual_target(const std::string& backend,
                                                const std::string& node) {
  auto hp = util::parse_host_port(node);
  if (!hp) {
    return tl::make_unexpected(hp.error());
  }
  return Target{backend, *hp};
}

std::string config_path(const std::optional<std::string>& flag, const Env& env) {
  if (flag && !flag->empty()) {
    return *flag;
  }
  if (const auto it = env.find("DBCHECK_CONFIG"); it != env.end() && !it->second.empty()) {
    return it->second;
  }
  return std::string{config::k_default_config_path};
}

Env env_from(char** envp) {
  Env env;
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    const std::string kv{*e};
    const auto eq = kv.find('=');
    if (eq != std::string::npos) {
      env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
  return env;
}

} // namespace dbcheck::extcheck
