#include "endpoint_names.hpp"

#include <util/format.hpp>

#include <fmt/ranges.h>

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace dbcheck::core {
namespace {

bool same_name(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool is_v6(const std::string& literal) {
  std::array<unsigned char, 16> buf{};
  return inet_pton(AF_INET6, literal.c_str(), buf.data()) == 1;
}

// The distinct addresses of the answer of `node`'s family (node: an IP literal).
std::vector<std::string> candidates(const NameAnswer& answer, const util::HostPort& node) {
  std::vector<std::string> out;
  for (const auto& a : *answer.addresses) {
    if (is_v6(a) != is_v6(node.host)) {
      continue;
    }
    const bool seen = std::any_of(out.begin(), out.end(), [&](const std::string& o) {
      return util::same_endpoint(util::HostPort{o, 1}, util::HostPort{a, 1});
    });
    if (!seen) {
      out.push_back(a);
    }
  }
  return out;
}

} // namespace

const NameAnswer* find_answer(const std::string& name, const std::vector<NameAnswer>& answers) {
  const auto it = std::find_if(answers.begin(), answers.end(),
                               [&](const NameAnswer& a) { return same_name(a.name, name); });
  return it == answers.end() ? nullptr : &*it;
}

std::vector<std::string> names_to_resolve(const std::vector<util::HostPort>& endpoints) {
  std::vector<std::string> names;
  for (const auto& e : endpoints) {
    if (util::is_ip_literal(e.host)) {
      continue;
    }
    if (std::none_of(names.begin(), names.end(),
                     [&](const std::string& n) { return same_name(n, e.host); })) {
      names.push_back(e.host);
    }
  }
  return names;
}

util::HostPort canonical_endpoint(const util::HostPort& named,
                                  const std::vector<NameAnswer>& answers,
                                  const util::HostPort& node) {
  // A node checked by name (by hand, [agent.local]) compares with the manager's spelling as
  // text: replacing the manager's name by an address would never equal it.
  if (util::is_ip_literal(named.host) || !util::is_ip_literal(node.host)) {
    return named;
  }
  const NameAnswer* answer = find_answer(named.host, answers);
  if (answer == nullptr || !answer->addresses) {
    return named;
  }
  const auto addrs = candidates(*answer, node);
  // Several addresses: a round-robin or service name, not one host. Taking whichever equals
  // this node would make every node it lists the writer.
  return addrs.size() == 1 ? util::HostPort{addrs.front(), named.port} : named;
}

std::string unresolved_because(const util::HostPort& named, const std::vector<NameAnswer>& answers,
                               const util::HostPort& node) {
  if (util::is_ip_literal(named.host) || !util::is_ip_literal(node.host)) {
    return {};
  }
  const NameAnswer* answer = find_answer(named.host, answers);
  if (answer == nullptr) {
    return util::format("{} was not resolved", named.host);
  }
  if (!answer->addresses) {
    return util::format("{} did not resolve: {}", named.host, answer->addresses.error());
  }
  const auto addrs = candidates(*answer, node);
  if (addrs.empty()) {
    return util::format("{} resolves to no {} address", named.host,
                        is_v6(node.host) ? "IPv6" : "IPv4");
  }
  if (addrs.size() > 1) {
    return util::format("{} resolves to {}: several hosts, so it is never taken for this node",
                        named.host, fmt::join(addrs, " and "));
  }
  return {};
}

std::string describe(const std::vector<NameAnswer>& answers) {
  std::string out;
  for (const auto& a : answers) {
    out += out.empty() ? "" : "; ";
    out += a.addresses ? util::format("{} -> {}", a.name,
                                      a.addresses->empty()
                                          ? std::string{"no address"}
                                          : util::format("{}", fmt::join(*a.addresses, ", ")))
                       : util::format("{}: {}", a.name, a.addresses.error());
  }
  return out;
}

} // namespace dbcheck::core
