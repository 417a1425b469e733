#include "patroni_status.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

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

// A positive number of seconds under `key` (Patroni accepts numbers or numeric strings), the
// default when absent, an error when present but unusable.
tl::expected<double, std::string> seconds_field(const json& doc, const char* key, double dflt) {
  const auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) {
    return dflt;
  }
  double v = -1;
  if (it->is_number()) {
    v = it->get<double>();
  } else if (it->is_string()) {
    const std::string s = it->get<std::string>();
    char* end = nullptr;
    v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) {
      v = -1;
    }
  }
  if (!std::isfinite(v) || v <= 0 || v > 86400) {
    return tl::make_unexpected(fmt::format("\"{}\" is not a number of seconds", key));
  }
  return v;
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
  const auto patroni = doc->find("patroni");
  if (patroni != doc->end() && patroni->is_object()) {
    const auto name = patroni->find("name");
    if (name != patroni->end() && name->is_string()) {
      s.name = name->get<std::string>();
    }
  }
  return s;
}

tl::expected<PatroniTiming, std::string> parse_patroni_timing(std::string_view body) {
  auto doc = parse_object(body);
  if (!doc) {
    return tl::make_unexpected(doc.error());
  }
  PatroniTiming t;
  auto ttl = seconds_field(*doc, "ttl", t.ttl);
  auto loop_wait = seconds_field(*doc, "loop_wait", t.loop_wait);
  auto retry = seconds_field(*doc, "retry_timeout", t.retry_timeout);
  for (const auto* r : {&ttl, &loop_wait, &retry}) {
    if (!*r) {
      return tl::make_unexpected(r->error());
    }
  }
  return PatroniTiming{*ttl, *loop_wait, *retry};
}

double max_dcs_silence_s(const PatroniTiming& timing) {
  return timing.loop_wait + timing.retry_timeout;
}

} // namespace dbcheck::core
