#include "patroni_status.hpp"

#include "patroni_tags.hpp"
#include "pg_identity.hpp"

#include <nlohmann/json.hpp>

namespace dbcheck::core {
namespace {

using nlohmann::json;

tl::expected<json, std::string> parse_object(std::string_view body) {
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return tl::make_unexpected(std::string{"answer is not JSON"});
  }
  if (!doc.is_object()) {
    return tl::make_unexpected(std::string{"answer is not a JSON object"});
  }
  return doc;
}

} // namespace

tl::expected<PatroniStatus, std::string> parse_patroni_status(std::string_view body) {
  auto doc = parse_object(body);
  if (!doc) {
    return tl::make_unexpected(doc.error());
  }
  PatroniStatus s;
  const auto state = doc->find("state");
  const auto role = doc->find("role");
  if (state == doc->end() || !state->is_string() || role == doc->end() || !role->is_string()) {
    return tl::make_unexpected(std::string{"answer has no \"state\" and \"role\""});
  }
  s.state = state->get<std::string>();
  s.role = role->get<std::string>();
  const auto seen = doc->find("dcs_last_seen");
  if (seen != doc->end() && seen->is_number_integer()) {
    s.dcs_last_seen = seen->get<long long>();
  }
  if (const auto id = doc->find("database_system_identifier"); id != doc->end()) {
    // pg_controldata prints it unsigned: a sign is as garbled as a letter.
    const std::string text = id->is_string() ? id->get<std::string>() : std::string{};
    s.system_id = text.starts_with('-') ? std::nullopt : parse_system_id(text);
    if (!s.system_id) {
      return tl::make_unexpected(
          std::string{"answer's \"database_system_identifier\" is not an unsigned number"});
    }
  }
  if (const auto fs = doc->find("failsafe_mode_is_active"); fs != doc->end()) {
    s.failsafe_active = fs->is_boolean() && fs->get<bool>();
  }
  if (const auto xlog = doc->find("xlog"); xlog != doc->end() && xlog->is_object()) {
    const auto at = xlog->find("location");
    if (at != xlog->end() && at->is_number_unsigned()) {
      s.wal_location = at->get<Lsn>();
    }
  }
  if (const auto tl = doc->find("timeline");
      tl != doc->end() && tl->is_number_unsigned() && tl->get<std::uint64_t>() <= UINT32_MAX) {
    s.timeline = static_cast<std::uint32_t>(tl->get<std::uint64_t>());
  }
  if (const auto tags = doc->find("tags"); tags != doc->end() && tags->is_object()) {
    const auto nlb = tags->find("noloadbalance");
    s.noloadbalance = nlb != tags->end() && truthy_tag(*nlb);
  }
  const auto patroni = doc->find("patroni");
  if (patroni != doc->end() && patroni->is_object()) {
    const auto name = patroni->find("name");
    if (name != patroni->end() && name->is_string()) {
      s.name = name->get<std::string>();
    }
  }
  return s;
}

} // namespace dbcheck::core
