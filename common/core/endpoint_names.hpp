#pragma once
// Host names the managers report (Patroni's connect_address, Sentinel's announce-hostnames)
// against the addresses HAProxy passes: the one matching rule, pure. The probe resolves the
// names (probe/name_resolver.hpp); this decides what an answer means.

#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <string>
#include <vector>

namespace dbcheck::core {

// What one name resolved to (IP literals, as the resolver printed them), or why it did not.
struct NameAnswer {
  std::string name;
  tl::expected<std::vector<std::string>, std::string> addresses;
};

// --- Interface ---

// The names among `endpoints` that need resolving: not IP literals, each once (names compare
// case-insensitively), in first-seen order.
std::vector<std::string> names_to_resolve(const std::vector<util::HostPort>& endpoints);

// The answer for `name` (compared case-insensitively), or nullptr when it was not looked up.
const NameAnswer* find_answer(const std::string& name, const std::vector<NameAnswer>& answers);

// The endpoint to compare with `node` and to connect to in place of `named`: `named` itself
// when it is an IP literal, its name is unresolved, or `node` is a name (names then compare as
// text); the one address of `node`'s family the name resolves to; `named` unchanged when it
// resolves to several such addresses (it cannot be said which host it means, so it is never
// taken for this node). Never a prefix or substring match.
util::HostPort canonical_endpoint(const util::HostPort& named,
                                  const std::vector<NameAnswer>& answers,
                                  const util::HostPort& node);

// Why `named` was left as it is, for a reason ("no such name", "resolves to 10.0.0.1 and
// 10.0.0.2"); empty when it is an IP literal, was replaced by its one address, or `node` is
// a name.
std::string unresolved_because(const util::HostPort& named, const std::vector<NameAnswer>& answers,
                               const util::HostPort& node);

// One line for a report step: "pg1.example -> 10.0.0.1; pg2.example: no such name".
std::string describe(const std::vector<NameAnswer>& answers);

} // namespace dbcheck::core
