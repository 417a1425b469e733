#pragma once
// What every section of the TOML file is read with: the error collector, the typed readers
// ("want_*") and the key tables ("rows") that store a key's value in a field. Only the
// config room includes it: toml++ is compiled once, in toml_reader.cpp (TOML_IMPLEMENTATION),
// and its declarations alone are seen elsewhere (TOML_HEADER_ONLY=0 for this room).

#include "password_file.hpp"

#include <core/disk_space.hpp>
#include <util/duration.hpp>
#include <util/format.hpp>
#include <util/host_port.hpp>

#include <toml++/toml.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dbcheck::config {

struct ConfigError;

// Collects errors with the file name and line of the offending key.
class Errors {
public:
  explicit Errors(std::string path) : m_path(std::move(path)) {}
  // An error at `where`, for `key`.
  void add(const toml::source_region& where, std::string_view key, std::string_view what);
  // An error whose message is already whole (it names its own place).
  void add_plain(std::string message) { m_messages.emplace_back(0, std::move(message)); }
  // A password file of `cluster` that cannot be read: an error of that cluster alone (see
  // Config::unreadable), unless the file has other errors too.
  void unreadable(const std::string& cluster, const toml::source_region& where,
                  std::string_view key, std::string_view what);
  // A setting of `cluster` that works but is unsafe for a writer: kept until parse_config knows
  // whether a writer backend uses the cluster.
  void warn(const std::string& cluster, const toml::source_region& where, std::string_view key,
            std::string_view what);
  // The warnings of the clusters `wanted` says a writer uses, in file order.
  std::vector<std::string> warnings_for(const std::function<bool(const std::string&)>& wanted);
  // True when the file has errors beyond unreadable password files.
  bool any() const { return !m_messages.empty(); }
  // Every message (unreadable password files included) in file order (toml++ iterates keys
  // alphabetically, people read top-down).
  ConfigError take();
  // The unreadable password files by cluster, for a file that has no other error.
  std::map<std::string, std::vector<std::string>> take_unreadable();

private:
  // A cluster's message at a line (an unreadable file, or a warning).
  struct AtLine {
    std::string cluster;
    toml::source_index line;
    std::string text;
  };
  std::string m_path;
  std::vector<std::pair<toml::source_index, std::string>> m_messages;
  std::vector<AtLine> m_unreadable;
  std::vector<AtLine> m_warnings;
};

// One key of a section: its name and how to store it.
template <class Target>
struct KeySpec {
  std::string_view name;
  std::function<void(Target&, const toml::node&, Errors&, const std::string& key)> apply;
};

// How a TOML value's type reads in an error message ("an integer").
std::string describe(toml::node_type t);

// The typed readers: the value of `n` (the key `key`), or nothing after an error in `e`.
std::optional<std::string> want_string(const toml::node& n, Errors& e, const std::string& key);
// true or false.
std::optional<bool> want_bool(const toml::node& n, Errors& e, const std::string& key);
// A duration longer than 0 ("500ms", "2s").
std::optional<util::Duration> want_duration(const toml::node& n, Errors& e, const std::string& key);
// A duration, 0 ("0s": off) included.
std::optional<util::Duration> want_duration_or_zero(const toml::node& n, Errors& e,
                                                    const std::string& key);
// A string among `allowed`.
std::optional<std::string> want_one_of(const toml::node& n, Errors& e, const std::string& key,
                                       std::initializer_list<std::string_view> allowed);
// "host:port".
std::optional<util::HostPort> want_host_port(const toml::node& n, Errors& e,
                                             const std::string& key);
// A whole number from 1 to 100 (HAProxy's fall and rise).
std::optional<int> want_count(const toml::node& n, Errors& e, const std::string& key);
// A size ("1GiB", util/byte_size.hpp) or a share of a filesystem's size ("5%", above 0 and
// below 100): the least free space a filesystem must keep.
std::optional<core::SpaceFloor> want_space_floor(const toml::node& n, Errors& e,
                                                 const std::string& key);
// A whole number from 0 to `max`.
std::optional<std::uint64_t> want_whole_number(const toml::node& n, Errors& e,
                                               const std::string& key, std::uint64_t max);
// An absolute path.
std::optional<std::string> want_absolute_path(const toml::node& n, Errors& e,
                                              const std::string& key);
// The secret in the file `n` names, for `cluster`. A file that cannot be read (missing, too
// open, empty) is that cluster's problem alone: checks of the other clusters still run.
std::optional<Secret> want_secret_file(const std::string& cluster, const toml::node& n, Errors& e,
                                       const std::string& key);

// A row of a key table: the key `name`, read by `read` (a want_* reader) and stored in
// `field` when it reads. The value is stored as it reads: an optional field stays empty after
// an error, a field with a default keeps it.
template <class Target, class Field, class Read>
KeySpec<Target> store(std::string_view name, Field Target::*field, Read read) {
  return {name, [field, read](Target& t, const toml::node& n, Errors& e, const std::string& key) {
            if (auto v = read(n, e, key)) {
              t.*field = std::move(*v);
            }
          }};
}

// A row for a key read elsewhere (a sub-table, or the key that chose the table).
template <class Target>
KeySpec<Target> read_elsewhere(std::string_view name) {
  return {name, [](Target&, const toml::node&, Errors&, const std::string&) {}};
}

// Why a key is refused rather than unknown (empty: merely unknown).
using RefusedFn = std::string_view (*)(std::string_view);

// The names of a key table, for "expected one of" messages.
template <class Target>
std::string join_names(const std::vector<KeySpec<Target>>& specs) {
  std::string out;
  for (const auto& s : specs) {
    out += out.empty() ? "" : ", ";
    out += s.name;
  }
  return out;
}

// Applies each key of `table` through `specs`, reporting keys that are not in the table (with
// `refused`'s reason when it has one for the key).
template <class Target>
void apply_keys(const toml::table& table, const std::vector<KeySpec<Target>>& specs,
                const std::string& section, Target& target, Errors& e,
                RefusedFn refused = nullptr) {
  for (auto&& [k, node] : table) {
    const std::string key_name{k.str()};
    const std::string full = util::format("{}.{}", section, key_name);
    const auto spec =
        std::find_if(specs.begin(), specs.end(), [&](const auto& s) { return s.name == key_name; });
    if (spec == specs.end() && refused != nullptr && !refused(key_name).empty()) {
      e.add(k.source(), full, util::format("\"{}\": {}", key_name, refused(key_name)));
      continue;
    }
    if (spec == specs.end()) {
      e.add(k.source(), full,
            util::format("unknown key \"{}\" in [{}] (expected one of: {})", key_name, section,
                         join_names(specs)));
      continue;
    }
    spec->apply(target, node, e, full);
  }
}

// Calls `fn(name, table, where)` for each [prefix.NAME] table, reporting anything else under
// prefix.
void for_each_named_table(const toml::node& node, std::string_view prefix, Errors& e,
                          const std::function<void(const std::string&, const toml::table&,
                                                   const toml::source_region&)>& fn);

// Reports each of `keys` that `table` lacks, at the section's header line.
void require_keys(const toml::table& table, std::initializer_list<const char*> keys,
                  const std::string& section, const toml::source_region& where, Errors& e);

} // namespace dbcheck::config
