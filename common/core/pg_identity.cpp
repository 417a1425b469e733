#include "pg_identity.hpp"

#include <util/format.hpp>

#include <charconv>

namespace dbcheck::core {

std::optional<SystemId> parse_system_id(std::string_view text) {
  if (text.empty()) {
    return std::nullopt;
  }
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (text.front() == '-') {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(first, last, v);
    if (ec != std::errc{} || end != last || v >= 0) {
      return std::nullopt;
    }
    return static_cast<SystemId>(v); // the same 64 bits pg_controldata prints unsigned
  }
  SystemId v = 0;
  const auto [end, ec] = std::from_chars(first, last, v);
  if (ec != std::errc{} || end != last || v == 0) {
    return std::nullopt; // initdb never makes 0: a zero is a garbled answer
  }
  return v;
}

std::optional<std::string> identity_mismatch(std::optional<SystemId> node,
                                             std::optional<SystemId> cluster,
                                             std::string_view whose) {
  if (!node || !cluster || *node == *cluster) {
    return std::nullopt;
  }
  return util::format("identity: PostgreSQL's system identifier {} is not the cluster's {} that "
                      "{} reports: this server line points at another cluster's node (or a data "
                      "directory restored from another cluster)",
                      *node, *cluster, whose);
}

std::string identity_unchecked(std::optional<SystemId> node, std::optional<SystemId> cluster,
                               std::string_view cluster_missing) {
  if (node && cluster) {
    return {};
  }
  if (!node) {
    return "identity not checked: pg_control_system() did not answer (revoked from the check "
           "user? GRANT EXECUTE ON FUNCTION pg_catalog.pg_control_system() TO it)";
  }
  return util::format("identity not checked: {}", cluster_missing);
}

} // namespace dbcheck::core
