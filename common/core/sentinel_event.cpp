#include "sentinel_event.hpp"

#include <vector>

namespace dbcheck::core {
namespace {

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') {
      ++i;
    }
    const std::size_t start = i;
    while (i < s.size() && s[i] != ' ') {
      ++i;
    }
    if (i > start) {
      out.push_back(s.substr(start, i - start));
    }
  }
  return out;
}

std::optional<util::HostPort> address(std::string_view ip, std::string_view port) {
  auto p = util::parse_port(port);
  if (ip.empty() || !p) {
    return std::nullopt;
  }
  return util::HostPort{std::string{ip}, *p};
}

} // namespace

bool is_failover_channel(std::string_view channel) {
  return channel == "+try-failover" || channel == "+elected-leader" ||
         channel.rfind("+failover-state-", 0) == 0 || channel == "+selected-slave" ||
         channel == "+promoted-slave" || channel == "+switch-master";
}

std::optional<SentinelEvent> parse_sentinel_event(std::string_view channel,
                                                  std::string_view payload) {
  const std::vector<std::string_view> w = words(payload);
  SentinelEvent e;
  e.channel = std::string{channel};
  e.failover = is_failover_channel(channel);
  std::optional<util::HostPort> master;
  if (channel == "+switch-master") {
    if (w.size() != 5) {
      return std::nullopt;
    }
    e.master_name = std::string{w[0]};
    master = address(w[1], w[2]);
  } else if (w.size() == 8 && w[4] == "@" &&
             (w[0] == "slave" || w[0] == "replica" || w[0] == "sentinel")) {
    e.master_name = std::string{w[5]};
    master = address(w[6], w[7]);
  } else if (w.size() == 4 && (w[0] == "master" || w[0] == "primary")) {
    e.master_name = std::string{w[1]};
    master = address(w[2], w[3]);
  }
  if (!master || e.master_name.empty()) {
    return std::nullopt;
  }
  e.master = *master;
  return e;
}

} // namespace dbcheck::core
