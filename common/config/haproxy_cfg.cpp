#include "haproxy_cfg.hpp"

#include <util/format.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace dbcheck::config {
namespace {

// A configuration larger than this is not a configuration.
constexpr std::streamoff k_max_file = 16 * 1024 * 1024;

// The keywords that open a section (HAProxy 2.6-3.x); any other first word belongs to the
// section before it.
constexpr std::array<std::string_view, 17> k_sections = {
    "global",    "defaults", "frontend",    "backend",   "listen",      "peers",
    "resolvers", "userlist", "mailers",     "program",   "http-errors", "ring",
    "cache",     "fcgi-app", "log-forward", "crt-store", "traces"};

// One line's words, or why they cannot be read.
struct Words {
  std::vector<std::string> words;
  std::string unset; // a "${NAME}" that is not set, when one was met
};

// Splits `line` as HAProxy does: blanks separate words; '#' starts a comment; a backslash
// escapes the next character (\t, \n, \r and \xHH name one); double quotes keep blanks and
// expand ${NAME}; single quotes keep everything. An unterminated quote is an error.
tl::expected<Words, std::string> split(std::string_view line, const EnvLookup& env) {
  Words out;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote == '\'') {
      if (c == '\'') {
        quote = 0;
      } else {
        word += c;
      }
      continue;
    }
    if (c == '\\' && i + 1 < line.size()) {
      const char n = line[++i];
      in_word = true;
      switch (n) {
      case 't':
        word += '\t';
        break;
      case 'n':
        word += '\n';
        break;
      case 'r':
        word += '\r';
        break;
      case 'x':
        if (i + 2 < line.size() && std::isxdigit(static_cast<unsigned char>(line[i + 1])) != 0 &&
            std::isxdigit(static_cast<unsigned char>(line[i + 2])) != 0) {
          word += static_cast<char>(
              std::strtol(std::string{line.substr(i + 1, 2)}.c_str(), nullptr, 16));
          i += 2;
        } else {
          word += n;
        }
        break;
      default:
        word += n;
      }
      continue;
    }
    if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '$' && i + 1 < line.size() && line[i + 1] == '{') {
        const auto end = line.find('}', i + 2);
        if (end == std::string_view::npos) {
          return tl::make_unexpected(std::string{"an unterminated ${...}"});
        }
        const std::string_view name = line.substr(i + 2, end - i - 2);
        if (auto value = env(name)) {
          word += *value;
        } else if (out.unset.empty()) {
          out.unset = std::string{name};
        }
        i = end;
      } else {
        word += c;
      }
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
      continue;
    }
    if (c == '#') {
      break;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      if (in_word) {
        out.words.push_back(std::move(word));
        word.clear();
        in_word = false;
      }
      continue;
    }
    word += c;
    in_word = true;
  }
  if (quote != 0) {
    return tl::make_unexpected(
        util::format("an unterminated {} quote", quote == '"' ? "double" : "single"));
  }
  if (in_word) {
    out.words.push_back(std::move(word));
  }
  return out;
}

// A server's address as HAProxy writes it: [ipv4@|ipv6@]HOST[:PORT], HOST an IPv6 address
// possibly in brackets (without brackets the last ':' separates the port, as in HAProxy).
// The port is none when absent or not a plain number (a range or a +/- offset). An error for
// the families HAProxy cannot health-check by address (unix@, abns@, fd@, ...).
tl::expected<std::pair<std::string, std::optional<std::uint16_t>>, std::string>
split_address(std::string_view a) {
  if (const auto at = a.find('@'); at != std::string_view::npos) {
    const std::string_view family = a.substr(0, at);
    if (family != "ipv4" && family != "ipv6") {
      return tl::make_unexpected(util::format("address {}: not an IP address", a));
    }
    a.remove_prefix(at + 1);
  }
  std::string_view host = a;
  std::string_view port;
  if (!a.empty() && a.front() == '[') {
    const auto close = a.find(']');
    if (close == std::string_view::npos) {
      return tl::make_unexpected(util::format("address {}: no closing ']'", a));
    }
    host = a.substr(1, close - 1);
    if (close + 1 < a.size() && a[close + 1] == ':') {
      port = a.substr(close + 2);
    }
  } else if (const auto colon = a.rfind(':'); colon != std::string_view::npos) {
    host = a.substr(0, colon);
    port = a.substr(colon + 1);
  }
  if (host.empty()) {
    return tl::make_unexpected(util::format("address {}: no host", a));
  }
  std::optional<std::uint16_t> number;
  if (!port.empty() && port.size() <= 5 &&
      std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const long n = std::strtol(std::string{port}.c_str(), nullptr, 10);
    if (n > 0 && n <= 65535) {
      number = static_cast<std::uint16_t>(n);
    }
  }
  return std::pair{std::string{host}, number};
}

// What `default-server` lines set for the servers after them, and what a server line sets.
struct ServerChecks {
  util::Duration inter{2000};
  int inter_line = 0;
  bool agent_check = false;
  std::optional<std::string> agent_send;
};

// Applies the check keywords among `words` (from `first`) to `c`; a value that is not a time
// leaves HAProxy's own `-c` to complain.
void apply_server_keywords(const std::vector<std::string>& words, std::size_t first, int line,
                           ServerChecks& c) {
  for (std::size_t i = first; i < words.size(); ++i) {
    const std::string& k = words[i];
    if (k == "inter" && i + 1 < words.size()) {
      if (auto t = parse_haproxy_time(words[++i])) {
        c.inter = *t;
        c.inter_line = line;
      }
    } else if (k == "agent-send" && i + 1 < words.size()) {
      c.agent_send = words[++i];
    } else if (k == "agent-check") {
      c.agent_check = true;
    } else if (k == "no-agent-check") {
      c.agent_check = false;
    }
  }
}

// Applies a proxy-level line (in `defaults`, `backend` or `listen`) that bears on checks.
void apply_proxy_line(const std::vector<std::string>& w, int line, HaproxyBackend& p,
                      ServerChecks& dflt) {
  const bool no = w[0] == "no" && w.size() >= 3;
  const std::size_t o = no ? 1 : 0;
  if (w[o] == "option" && w.size() > o + 1 && w[o + 1] == "external-check") {
    p.external_check = !no;
    p.external_check_line = line;
  } else if (w[0] == "external-check" && w.size() >= 3 && w[1] == "command") {
    p.command = w[2];
    p.command_line = line;
  } else if (w[0] == "timeout" && w.size() >= 3 && (w[1] == "check" || w[1] == "connect")) {
    const auto t = parse_haproxy_time(w[2]);
    if (w[1] == "check") {
      p.timeout_check = t;
      p.timeout_check_line = line;
    } else {
      p.timeout_connect = t;
      p.timeout_connect_line = line;
    }
  } else if (w[0] == "default-server") {
    apply_server_keywords(w, 1, line, dflt);
  }
}

} // namespace

std::optional<util::Duration> parse_haproxy_time(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && digits < 12 && text[digits] >= '0' && text[digits] <= '9') {
    ++digits;
  }
  if (digits == 0 || (digits < text.size() && text[digits] >= '0' && text[digits] <= '9')) {
    return std::nullopt;
  }
  const long long n = std::strtoll(std::string{text.substr(0, digits)}.c_str(), nullptr, 10);
  const std::string_view unit = text.substr(digits);
  if (unit == "us") {
    return util::Duration{(n + 999) / 1000};
  }
  constexpr std::array<std::pair<std::string_view, long long>, 6> k_units = {
      {{"", 1}, {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}}};
  for (const auto& [name, factor] : k_units) {
    if (unit == name) {
      if (n > std::numeric_limits<long long>::max() / factor) {
        return std::nullopt; // no HAProxy accepts a time this long either
      }
      return util::Duration{n * factor};
    }
  }
  return std::nullopt;
}

tl::expected<HaproxyServers, std::string>
parse_haproxy_cfg(std::string_view text, const std::string& file, const EnvLookup& env) {
  HaproxyServers out;
  std::string section; // the keyword of the current section
  std::string proxy;   // its name
  std::string state_file;
  std::string state_base;
  // Each `defaults` section starts afresh, and the proxies after it start from it.
  HaproxyBackend defaults;
  ServerChecks defaults_server;
  ServerChecks proxy_server;
  int number = 0;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    ++number;
    auto words = split(line, env);
    if (!words) {
      return tl::make_unexpected(util::format("{}:{}: {}", file, number, words.error()));
    }
    const auto& w = words->words;
    if (w.empty()) {
      continue;
    }
    if (std::find(k_sections.begin(), k_sections.end(), w[0]) != k_sections.end()) {
      section = w[0];
      proxy = w.size() > 1 ? w[1] : "";
      if (section == "defaults") {
        defaults = HaproxyBackend{};
        defaults_server = ServerChecks{};
      } else if (section == "backend" || section == "listen") {
        HaproxyBackend b = defaults;
        b.name = proxy;
        b.line = number;
        out.backends.push_back(std::move(b));
        proxy_server = defaults_server;
      }
      continue;
    }
    if (section == "defaults") {
      apply_proxy_line(w, number, defaults, defaults_server);
    } else if (section == "backend" || section == "listen") {
      apply_proxy_line(w, number, out.backends.back(), proxy_server);
    }
    if (section == "global" && w.size() >= 2 && w[0] == "server-state-file") {
      state_file = w[1];
    } else if (section == "global" && w.size() >= 2 && w[0] == "server-state-base") {
      state_base = w[1];
    }
    if (section != "backend" && section != "listen") {
      continue;
    }
    if (w[0] == "server-template") {
      out.skipped.push_back(util::format(
          "{}:{}: server-template in {}: its servers are named at run time, not listed", file,
          number, proxy));
      continue;
    }
    if (w[0] != "server") {
      continue;
    }
    if (w.size() < 3) {
      out.skipped.push_back(
          util::format("{}:{}: a server line without a name and address", file, number));
      continue;
    }
    if (!words->unset.empty()) {
      out.skipped.push_back(util::format("{}:{}: server {}/{}: ${{{}}} is not set", file, number,
                                         proxy, w[1], words->unset));
      continue;
    }
    auto address = split_address(w[2]);
    if (!address) {
      out.skipped.push_back(
          util::format("{}:{}: server {}/{}: {}", file, number, proxy, w[1], address.error()));
      continue;
    }
    HaproxyServer s;
    s.backend = proxy;
    s.name = w[1];
    s.host = std::move(address->first);
    s.port = address->second;
    s.checked = std::find(w.begin() + 3, w.end(), "check") != w.end();
    s.line = number;
    ServerChecks c = proxy_server;
    apply_server_keywords(w, 3, number, c);
    s.inter = c.inter;
    s.inter_line = c.inter_line;
    s.agent_check = c.agent_check;
    s.agent_send = std::move(c.agent_send);
    out.servers.push_back(std::move(s));
  }
  // HAProxy's rule (srv_state_get_filepath): absolute, or no base: the name as written.
  if (!state_file.empty()) {
    out.state_file = state_file.front() == '/' || state_base.empty()
                         ? state_file
                         : state_base + (state_base.back() == '/' ? "" : "/") + state_file;
  }
  return out;
}

tl::expected<HaproxyServers, std::string> load_haproxy_cfg(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return tl::make_unexpected(util::format("{}: cannot open the HAProxy configuration", path));
  }
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0 || size > k_max_file) {
    return tl::make_unexpected(util::format("{}: not a readable file of at most 16 MiB", path));
  }
  in.seekg(0);
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), size);
  if (!in) {
    return tl::make_unexpected(util::format("{}: read error", path));
  }
  return parse_haproxy_cfg(text, path, [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string{name}.c_str());
    return v != nullptr ? std::optional<std::string>{v} : std::nullopt;
  });
}

} // namespace dbcheck::config
