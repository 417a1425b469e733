// The matching rule for host names a manager reports (core/endpoint_names.hpp): a name is
// replaced only by the one address of the node's family it resolves to; several, none, or a
// failed lookup leave it a name that never matches an address.
#include "dbcheck_catch.hpp"

#include <core/endpoint_names.hpp>

using dbcheck::core::NameAnswer;
using dbcheck::util::HostPort;
namespace core = dbcheck::core;

namespace {

NameAnswer resolved(std::string name, std::vector<std::string> addrs) {
  return {std::move(name), std::move(addrs)};
}

NameAnswer failed(std::string name, std::string why) {
  return {std::move(name), tl::make_unexpected(std::move(why))};
}

const HostPort k_node{"10.0.0.1", 5432};

} // namespace

TEST_CASE("names to resolve: each name once, case-insensitively, never an IP literal",
          "[core][names]") {
  const auto names = core::names_to_resolve({{"pg1.example", 5432},
                                             {"10.0.0.2", 5432},
                                             {"PG1.example", 5433},
                                             {"::1", 5432},
                                             {"pg2.example", 5432}});
  CHECK(names == std::vector<std::string>{"pg1.example", "pg2.example"});
}

TEST_CASE("a name that resolves to the node's address alone is that address", "[core][names]") {
  const std::vector<NameAnswer> answers{resolved("pg1.example", {"10.0.0.1"})};
  CHECK(core::canonical_endpoint({"pg1.example", 5432}, answers, k_node) == k_node);
  CHECK(core::canonical_endpoint({"PG1.EXAMPLE", 5432}, answers, k_node) == k_node);
  CHECK(core::unresolved_because({"pg1.example", 5432}, answers, k_node).empty());
  // The port still has to match: the name is replaced, the port kept.
  CHECK(core::canonical_endpoint({"pg1.example", 5433}, answers, k_node) ==
        HostPort{"10.0.0.1", 5433});
}

TEST_CASE("a dual-stack name is the one address of the node's family", "[core][names]") {
  const std::vector<NameAnswer> answers{resolved("pg1.example", {"fd00::1", "10.0.0.1"})};
  CHECK(core::canonical_endpoint({"pg1.example", 5432}, answers, k_node) == k_node);
  CHECK(core::canonical_endpoint({"pg1.example", 5432}, answers, {"fd00:0::1", 5432}) ==
        HostPort{"fd00::1", 5432});
}

TEST_CASE("a name of several hosts is never taken for this node", "[core][names]") {
  // A round-robin name would otherwise make every node it lists the writer.
  const std::vector<NameAnswer> answers{
      resolved("db-any.example", {"10.0.0.1", "10.0.0.2", "10.0.0.3"})};
  const HostPort named{"db-any.example", 5432};
  CHECK(core::canonical_endpoint(named, answers, k_node) == named);
  CHECK_FALSE(
      dbcheck::util::same_endpoint(core::canonical_endpoint(named, answers, k_node), k_node));
  CHECK(core::unresolved_because(named, answers, k_node) ==
        "db-any.example resolves to 10.0.0.1 and 10.0.0.2 and 10.0.0.3: several hosts, so it "
        "is never taken for this node");
}

TEST_CASE("a name that did not resolve stays a name, with the reason", "[core][names]") {
  const std::vector<NameAnswer> answers{failed("pg1.example", "no answer before the deadline")};
  const HostPort named{"pg1.example", 5432};
  CHECK(core::canonical_endpoint(named, answers, k_node) == named);
  CHECK(core::unresolved_because(named, answers, k_node) ==
        "pg1.example did not resolve: no answer before the deadline");
  CHECK(core::unresolved_because({"pg9.example", 5432}, answers, k_node) ==
        "pg9.example was not resolved");
  CHECK(core::unresolved_because({"10.0.0.9", 5432}, answers, k_node).empty());
}

TEST_CASE("a name with no address of the node's family stays a name", "[core][names]") {
  const std::vector<NameAnswer> answers{resolved("pg1.example", {"fd00::1"})};
  const HostPort named{"pg1.example", 5432};
  CHECK(core::canonical_endpoint(named, answers, k_node) == named);
  CHECK(core::unresolved_because(named, answers, k_node) ==
        "pg1.example resolves to no IPv4 address");
}

TEST_CASE("never a prefix or substring match", "[core][names]") {
  const std::vector<NameAnswer> answers{resolved("pg1", {"10.0.0.1"})};
  CHECK(core::find_answer("pg1.example", answers) == nullptr);
  CHECK(core::canonical_endpoint({"pg1.example", 5432}, answers, k_node) ==
        HostPort{"pg1.example", 5432});
  CHECK(core::canonical_endpoint({"pg", 5432}, answers, k_node) == HostPort{"pg", 5432});
}

TEST_CASE("the lookups read as one line", "[core][names]") {
  CHECK(core::describe({resolved("pg1.example", {"10.0.0.1", "fd00::1"}),
                        failed("pg2.example", "no such name")}) ==
        "pg1.example -> 10.0.0.1, fd00::1; pg2.example: no such name");
}

TEST_CASE("a node checked by name compares with the manager's spelling as text", "[core][names]") {
  const std::vector<NameAnswer> answers{resolved("pg1.example", {"10.0.0.1"})};
  const HostPort by_name{"pg1.example", 5432};
  CHECK(core::canonical_endpoint({"pg1.example", 5432}, answers, by_name) == by_name);
  CHECK(core::unresolved_because({"pg1.example", 5432}, answers, by_name).empty());
}
