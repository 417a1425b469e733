#include "patroni_cluster.hpp"

#include "patroni_tags.hpp"

#include <util/format.hpp>

#include <nlohmann/json.hpp>

namespace dbcheck::core {
namespace {

using nlohmann::json;

std::string string_field(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

} // namespace

tl::expected<ClusterView, std::string> parse_patroni_cluster(std::string_view body) {
  const json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return tl::make_unexpected(std::string{"answer is not JSON"});
  }
  if (!doc.is_object()) {
    return tl::make_unexpected(std::string{"answer is not a JSON object"});
  }
  const auto members = doc.find("members");
  if (members == doc.end() || !members->is_array()) {
    return tl::make_unexpected(std::string{"answer has no \"members\" list"});
  }
  ClusterView view;
  const auto pause = doc.find("pause");
  view.paused = pause != doc.end() && pause->is_boolean() && pause->get<bool>();
  for (const auto& m : *members) {
    if (!m.is_object()) {
      return tl::make_unexpected(std::string{"a member entry is not a JSON object"});
    }
    PatroniMember member;
    member.name = string_field(m, "name");
    member.role = string_field(m, "role");
    member.state = string_field(m, "state");
    member.api_url = string_field(m, "api_url");
    const std::string host = string_field(m, "host");
    const auto port = m.find("port");
    if (member.role.empty()) {
      return tl::make_unexpected(util::format("member \"{}\" has no role", member.name));
    }
    if (host.empty() || port == m.end() || !port->is_number_integer()) {
      continue;
    }
    const auto p = port->get<long long>();
    if (p <= 0 || p > 65535) {
      return tl::make_unexpected(util::format("member \"{}\" has port {}", member.name, p));
    }
    member.address = util::HostPort{host, static_cast<std::uint16_t>(p)};
    // Shown to operators only (dbcheck status): judged nowhere, so a missing or odd value is
    // left empty rather than refused.
    if (const auto tl = m.find("timeline"); tl != m.end() && tl->is_number_integer()) {
      member.timeline = tl->get<long long>();
    }
    if (const auto lag = m.find("lag"); lag != m.end()) {
      member.lag = lag->is_number_integer() ? std::to_string(lag->get<long long>())
                   : lag->is_string()       ? lag->get<std::string>()
                                            : std::string{};
    }
    const auto tags = m.find("tags");
    if (tags != m.end() && tags->is_object()) {
      const auto nlb = tags->find("noloadbalance");
      member.noloadbalance = nlb != tags->end() && truthy_tag(*nlb);
      const auto nfo = tags->find("nofailover");
      member.nofailover = nfo != tags->end() && truthy_tag(*nfo);
      if (const auto from = tags->find("replicatefrom"); from != tags->end() && from->is_string()) {
        member.replicatefrom = from->get<std::string>();
      }
    }
    view.members.push_back(std::move(member));
  }
  return view;
}

bool is_leader_role(std::string_view role) {
  return role == "leader" || role == "master" || role == "primary";
}

bool is_synchronous_role(std::string_view role) {
  return role == "sync_standby" || role == "quorum_standby";
}

const PatroniMember* find_leader(const ClusterView& view) {
  for (const auto& m : view.members) {
    if (is_leader_role(m.role)) {
      return &m;
    }
  }
  return nullptr;
}

const PatroniMember* find_standby_leader(const ClusterView& view) {
  for (const auto& m : view.members) {
    if (m.role == "standby_leader") {
      return &m;
    }
  }
  return nullptr;
}

const PatroniMember* find_member(const ClusterView& view, const util::HostPort& node) {
  for (const auto& m : view.members) {
    if (util::same_endpoint(m.address, node)) {
      return &m;
    }
  }
  return nullptr;
}

} // namespace dbcheck::core
