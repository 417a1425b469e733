// toml++ is compiled here, once for the whole room (the other files see its declarations only),
// with the readers every section shares.
#define TOML_IMPLEMENTATION
#include "toml_reader.hpp"

#include "load_config.hpp"

#include <util/byte_size.hpp>

#include <cstdlib>

namespace dbcheck::config {

void Errors::add(const toml::source_region& where, std::string_view key, std::string_view what) {
  m_messages.emplace_back(where.begin.line,
                          util::format("{}:{}: {}: {}", m_path, where.begin.line, key, what));
}

void Errors::unreadable(const std::string& cluster, const toml::source_region& where,
                        std::string_view key, std::string_view what) {
  m_unreadable.push_back({cluster, where.begin.line,
                          util::format("{}:{}: {}: {}", m_path, where.begin.line, key, what)});
}

void Errors::warn(const std::string& cluster, const toml::source_region& where,
                  std::string_view key, std::string_view what) {
  m_warnings.push_back({cluster, where.begin.line,
                        util::format("{}:{}: {}: {}", m_path, where.begin.line, key, what)});
}

std::vector<std::string>
Errors::warnings_for(const std::function<bool(const std::string&)>& wanted) {
  std::stable_sort(m_warnings.begin(), m_warnings.end(),
                   [](const auto& a, const auto& b) { return a.line < b.line; });
  std::vector<std::string> out;
  for (auto& w : m_warnings) {
    if (wanted(w.cluster)) {
      out.push_back(std::move(w.text));
    }
  }
  return out;
}

ConfigError Errors::take() {
  for (auto& u : m_unreadable) {
    m_messages.emplace_back(u.line, std::move(u.text));
  }
  m_unreadable.clear();
  std::stable_sort(m_messages.begin(), m_messages.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  ConfigError out;
  for (auto& [line, text] : m_messages) {
    out.messages.push_back(std::move(text));
  }
  return out;
}

std::map<std::string, std::vector<std::string>> Errors::take_unreadable() {
  std::map<std::string, std::vector<std::string>> out;
  for (auto& u : m_unreadable) {
    out[u.cluster].push_back(std::move(u.text));
  }
  m_unreadable.clear();
  return out;
}

std::string describe(toml::node_type t) {
  switch (t) {
  case toml::node_type::string:
    return "a string";
  case toml::node_type::integer:
    return "an integer";
  case toml::node_type::floating_point:
    return "a number";
  case toml::node_type::boolean:
    return "a boolean";
  case toml::node_type::array:
    return "a list";
  case toml::node_type::table:
    return "a table";
  case toml::node_type::date:
  case toml::node_type::time:
  case toml::node_type::date_time:
    return "a date/time";
  default:
    return "nothing";
  }
}

std::optional<std::string> want_string(const toml::node& n, Errors& e, const std::string& key) {
  if (auto v = n.value<std::string>(); v && n.is_string()) {
    return v;
  }
  e.add(n.source(), key, util::format("expected a string, got {}", describe(n.type())));
  return std::nullopt;
}

std::optional<bool> want_bool(const toml::node& n, Errors& e, const std::string& key) {
  if (n.is_boolean()) {
    return *n.value<bool>();
  }
  e.add(n.source(), key, util::format("expected true or false, got {}", describe(n.type())));
  return std::nullopt;
}

std::optional<util::Duration> want_duration_or_zero(const toml::node& n, Errors& e,
                                                    const std::string& key) {
  auto s = want_string(n, e, key);
  if (!s) {
    return std::nullopt;
  }
  auto d = util::parse_duration(*s);
  if (!d) {
    e.add(n.source(), key, d.error());
    return std::nullopt;
  }
  return *d;
}

std::optional<util::Duration> want_duration(const toml::node& n, Errors& e,
                                            const std::string& key) {
  auto d = want_duration_or_zero(n, e, key);
  if (!d) {
    return std::nullopt;
  }
  if (d->count() <= 0) {
    e.add(n.source(), key,
          util::format("\"{}\" must be longer than 0ms", n.value_or(std::string_view{})));
    return std::nullopt;
  }
  return *d;
}

std::optional<std::string> want_one_of(const toml::node& n, Errors& e, const std::string& key,
                                       std::initializer_list<std::string_view> allowed) {
  auto s = want_string(n, e, key);
  if (!s) {
    return std::nullopt;
  }
  if (std::find(allowed.begin(), allowed.end(), *s) == allowed.end()) {
    std::string list;
    for (auto a : allowed) {
      list += list.empty() ? "" : ", ";
      list += util::format("\"{}\"", a);
    }
    e.add(n.source(), key, util::format("\"{}\" is not one of {}", *s, list));
    return std::nullopt;
  }
  return s;
}

std::optional<util::HostPort> want_host_port(const toml::node& n, Errors& e,
                                             const std::string& key) {
  auto s = want_string(n, e, key);
  if (!s) {
    return std::nullopt;
  }
  auto hp = util::parse_host_port(*s);
  if (!hp) {
    e.add(n.source(), key, hp.error());
    return std::nullopt;
  }
  return *hp;
}

std::optional<int> want_count(const toml::node& n, Errors& e, const std::string& key) {
  const auto v = n.value<int64_t>();
  if (!n.is_integer() || !v || *v < 1 || *v > 100) {
    e.add(n.source(), key, "expected a whole number from 1 to 100");
    return std::nullopt;
  }
  return static_cast<int>(*v);
}

std::optional<core::SpaceFloor> want_space_floor(const toml::node& n, Errors& e,
                                                 const std::string& key) {
  const auto text = want_string(n, e, key);
  if (!text) {
    return std::nullopt;
  }
  core::SpaceFloor floor;
  if (!text->empty() && text->back() == '%') {
    const std::string number = text->substr(0, text->size() - 1);
    char* end = nullptr;
    const double pct =
        number.empty() || number.front() == ' ' ? -1 : std::strtod(number.c_str(), &end);
    if (end == nullptr || *end != '\0' || !(pct > 0 && pct < 100)) {
      e.add(n.source(), key,
            util::format("\"{}\" is not a share of the filesystem (expected a percentage above 0 "
                         "and below 100, e.g. \"5%\")",
                         *text));
      return std::nullopt;
    }
    floor.percent = pct;
    return floor;
  }
  const auto bytes = util::parse_byte_size(*text);
  if (!bytes) {
    e.add(n.source(), key, bytes.error() + ", or a percentage such as \"5%\"");
    return std::nullopt;
  }
  floor.bytes = *bytes;
  return floor;
}

std::optional<std::uint64_t> want_whole_number(const toml::node& n, Errors& e,
                                               const std::string& key, std::uint64_t max) {
  const auto v = n.value<int64_t>();
  if (!n.is_integer() || !v || *v < 0 || static_cast<std::uint64_t>(*v) > max) {
    e.add(n.source(), key, util::format("expected a whole number from 0 to {}", max));
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(*v);
}

std::optional<std::string> want_absolute_path(const toml::node& n, Errors& e,
                                              const std::string& key) {
  auto v = want_string(n, e, key);
  if (v && (v->empty() || v->front() != '/')) {
    e.add(n.source(), key, util::format("\"{}\" is not an absolute path", *v));
    return std::nullopt;
  }
  return v;
}

std::optional<Secret> want_secret_file(const std::string& cluster, const toml::node& n, Errors& e,
                                       const std::string& key) {
  auto v = want_string(n, e, key);
  if (!v) {
    return std::nullopt;
  }
  auto secret = read_password_file(*v);
  if (!secret) {
    e.unreadable(cluster, n.source(), key, secret.error());
    return std::nullopt;
  }
  return std::move(*secret);
}

void for_each_named_table(const toml::node& node, std::string_view prefix, Errors& e,
                          const std::function<void(const std::string&, const toml::table&,
                                                   const toml::source_region&)>& fn) {
  const toml::table* t = node.as_table();
  if (t == nullptr) {
    e.add(node.source(), prefix,
          util::format("expected tables like [{}.NAME], got {}", prefix, describe(node.type())));
    return;
  }
  for (auto&& [k, child] : *t) {
    const toml::table* ct = child.as_table();
    if (ct == nullptr) {
      e.add(k.source(), util::format("{}.{}", prefix, k.str()),
            util::format("expected a table [{}.{}], got {}", prefix, k.str(),
                         describe(child.type())));
      continue;
    }
    fn(std::string{k.str()}, *ct, k.source());
  }
}

void require_keys(const toml::table& table, std::initializer_list<const char*> keys,
                  const std::string& section, const toml::source_region& where, Errors& e) {
  for (const char* required : keys) {
    if (!table.contains(required)) {
      e.add(where, section, util::format("missing required key \"{}\"", required));
    }
  }
}

} // namespace dbcheck::config
