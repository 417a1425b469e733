#pragma once
// Scripted peers for the probe's unit tests: answers come from functions the test sets, every
// question is logged in order with the deadline it was given, and time is virtual (it moves
// only when a check sleeps or a scripted answer says it took a while).

#include <probe/peers.hpp>
#include <util/format.hpp>

#include <fmt/ranges.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace dbcheck::testing {

using probe::Clock;
using probe::Deadline;

// One question a check asked.
struct Asked {
  // "open 10.0.0.1:5432", "sql 10.0.0.1:5432 <sql>", "get <url>", "post <url> <body>"
  std::string what;
  Clock::time_point by; // the deadline it was given
  Clock::time_point at; // virtual time it was asked
};

class FakePeers final : public probe::Peers {
public:
  using PgAnswer =
      std::function<tl::expected<std::vector<probe::PgRow>, core::ProbeError>(const std::string&)>;
  using RedisAnswer = std::function<tl::expected<std::vector<core::RespValue>, core::ProbeError>(
      const std::vector<probe::RedisCommand>&)>;
  using HttpAnswer = std::function<probe::HttpReply(const std::string& url)>;
  using PostAnswer =
      std::function<probe::HttpReply(const std::string& url, const std::string& body)>;

  // Scripts, by "host:port" (PostgreSQL, Redis) and by URL (HTTP).
  std::map<std::string, PgAnswer> pg_answers;
  std::map<std::string, RedisAnswer> redis_answers;
  HttpAnswer http;
  // POSTs (the switchover's); unset: no answer (status 0, "not scripted").
  PostAnswer post_answer;
  // Names and what they resolve to; a name not here answers "no such name".
  std::map<std::string, std::vector<std::string>> names;
  // statvfs answers by path; a path not here answers "No such file or directory".
  std::map<std::string, tl::expected<core::FsSpace, std::string>> disks;
  // Each answer takes this long on the virtual clock.
  Clock::duration answer_takes = std::chrono::milliseconds{1};
  // The view another check shared (given to a check that asks for one), and what checks shared.
  std::optional<probe::SharedView> shared;
  std::vector<probe::SharedView> shares;
  // What mark_check() answers (the time since the check before), and the max age the last
  // shared view was asked for at.
  std::optional<std::chrono::nanoseconds> since_last;
  std::chrono::milliseconds asked_max_age{0};

  // What was asked, in order.
  std::vector<Asked> log() {
    std::lock_guard lock(m_mutex);
    return m_log;
  }
  // The index of the first entry of log() that starts with `prefix`, or -1.
  int first(const std::string& prefix) {
    const auto l = log();
    for (std::size_t i = 0; i < l.size(); ++i) {
      if (l[i].what.rfind(prefix, 0) == 0) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }
  // How many entries of log() start with `prefix`.
  int count(const std::string& prefix) {
    int n = 0;
    for (const auto& a : log()) {
      n += a.what.rfind(prefix, 0) == 0 ? 1 : 0;
    }
    return n;
  }

  // Every PostgreSQL target a check asked for (what libpq would be given), in order.
  std::vector<probe::PgTarget> pg_targets() {
    std::lock_guard lock(m_mutex);
    return m_pg_targets;
  }

  std::unique_ptr<probe::PgPeer> pg(const probe::PgTarget& target) override {
    {
      std::lock_guard lock(m_mutex);
      m_pg_targets.push_back(target);
    }
    return std::make_unique<Pg>(*this, util::to_string(target.address));
  }
  std::unique_ptr<probe::RedisPeer> redis(const util::HostPort& address,
                                          const config::RedisTls&) override {
    return std::make_unique<Redis>(*this, util::to_string(address));
  }
  std::vector<probe::HttpReply> get_all(const std::vector<std::string>& urls,
                                        const probe::HttpOptions&, const Deadline& deadline,
                                        const probe::EnoughFn& enough) override {
    std::vector<probe::HttpReply> replies(urls.size());
    bool done = false;
    for (std::size_t i = 0; i < urls.size(); ++i) {
      note("get " + urls[i], deadline);
      if (done) {
        replies[i].attempt = {urls[i], 0, "not needed", false, 0};
        continue;
      }
      replies[i] = http(urls[i]);
      replies[i].attempt.url = urls[i];
      done = enough(i, replies[i]);
    }
    return replies;
  }
  probe::HttpReply post(const std::string& url, const std::string& body,
                        const std::optional<probe::HttpCredentials>&, const probe::HttpOptions&,
                        const Deadline& deadline) override {
    note("post " + url + " " + body, deadline);
    probe::HttpReply r;
    if (post_answer) {
      r = post_answer(url, body);
    } else {
      r.attempt.error = "not scripted";
    }
    r.attempt.url = url;
    return r;
  }
  std::vector<core::NameAnswer> resolve(const std::vector<std::string>& asked,
                                        const Deadline& deadline) override {
    std::vector<core::NameAnswer> out;
    for (const auto& n : asked) {
      note("resolve " + n, deadline);
      const auto it = names.find(n);
      if (it == names.end()) {
        out.push_back({n, tl::make_unexpected(std::string{"no such name"})});
      } else {
        out.push_back({n, it->second});
      }
    }
    return out;
  }
  std::optional<probe::SharedView> shared_view(const probe::ShareSettings& settings,
                                               const std::string& key) override {
    note("shared view " + key, Deadline{Clock::time_point{}});
    std::lock_guard lock(m_mutex);
    asked_max_age = settings.max_age;
    return settings.max_age.count() > 0 ? shared : std::nullopt;
  }
  std::optional<std::chrono::nanoseconds> mark_check(const probe::ShareSettings&,
                                                     const std::string& key) override {
    note("mark " + key, Deadline{Clock::time_point{}});
    return since_last;
  }
  void share_view(const probe::ShareSettings&, const std::string& key,
                  const probe::SharedView& view) override {
    note("share " + key, Deadline{Clock::time_point{}});
    std::lock_guard lock(m_mutex);
    shares.push_back(view);
  }
  tl::expected<core::FsSpace, std::string> fs_space(const std::string& path) override {
    note("statvfs " + path, Deadline{Clock::time_point{}});
    const auto it = disks.find(path);
    if (it == disks.end()) {
      return tl::make_unexpected(std::string{"No such file or directory"});
    }
    return it->second;
  }
  Clock::time_point now() override {
    std::lock_guard lock(m_mutex);
    return m_now;
  }
  void sleep_for(Clock::duration d) override {
    std::lock_guard lock(m_mutex);
    m_now += d;
    ++m_sleeps;
  }
  // How often a check slept.
  int sleeps() {
    std::lock_guard lock(m_mutex);
    return m_sleeps;
  }

private:
  void note(std::string what, const Deadline& by) {
    std::lock_guard lock(m_mutex);
    m_now += answer_takes;
    m_log.push_back({std::move(what), by.at(), m_now});
  }

  class Pg final : public probe::PgPeer {
  public:
    Pg(FakePeers& f, std::string key) : m_f(f), m_key(std::move(key)) {}
    tl::expected<void, core::ProbeError> open(const Deadline& d) override {
      m_f.note("open " + m_key, d);
      return {};
    }
    tl::expected<std::vector<probe::PgRow>, core::ProbeError> query(const std::string& sql,
                                                                    const Deadline& d) override {
      m_f.note("sql " + m_key + " " + sql, d);
      return m_f.pg_answers.at(m_key)(sql);
    }

  private:
    FakePeers& m_f;
    std::string m_key;
  };

  class Redis final : public probe::RedisPeer {
  public:
    Redis(FakePeers& f, std::string key) : m_f(f), m_key(std::move(key)) {}
    tl::expected<void, core::ProbeError> open(const Deadline& d) override {
      m_f.note("open " + m_key, d);
      return {};
    }
    tl::expected<std::vector<core::RespValue>, core::ProbeError>
    pipeline(const std::vector<probe::RedisCommand>& cmds, const Deadline& d) override {
      std::string text;
      for (const auto& c : cmds) {
        text += (text.empty() ? "" : "; ") + util::format("{}", fmt::join(c, " "));
      }
      m_f.note("redis " + m_key + " " + text, d);
      return m_f.redis_answers.at(m_key)(cmds);
    }

  private:
    FakePeers& m_f;
    std::string m_key;
  };

  std::mutex m_mutex;
  std::vector<Asked> m_log;
  std::vector<probe::PgTarget> m_pg_targets;
  Clock::time_point m_now = Clock::now();
  int m_sleeps = 0;
};

// Where a scripted peer hangs until the test lets it go (a peer that never answers in time).
class Gate {
public:
  // Blocks until open() (bounded, so a broken test cannot hang the suite).
  void wait() {
    std::unique_lock lock(m_mutex);
    m_cv.wait_for(lock, std::chrono::seconds{10}, [&] { return m_open; });
  }
  // Lets every waiter go.
  void open() {
    {
      std::lock_guard lock(m_mutex);
      m_open = true;
    }
    m_cv.notify_all();
  }

private:
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_open = false;
};

// Waits (at most 5 s) until the test holds the only reference to `peers`: the steps a check
// abandoned have finished. No test may leave a thread behind: a later one that signals the
// process (test_extcheck_process_setup) would have it delivered there.
inline bool settled(const std::shared_ptr<FakePeers>& peers) {
  const auto until = Clock::now() + std::chrono::seconds{5};
  while (peers.use_count() > 1 && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
  return peers.use_count() == 1;
}

// An HTTP 200 with `body`.
inline probe::HttpReply http_ok(std::string body) {
  probe::HttpReply r;
  r.attempt.status = 200;
  r.body = std::move(body);
  return r;
}

// A two-member Patroni cluster (pg1 leader at 10.0.0.1, pg2 replica at 10.0.0.2) as /cluster
// lists it, and pg1's own /primary: what the PostgreSQL tests' members answer.
inline constexpr const char* k_two_member_cluster = R"({"members": [
  {"name": "pg1", "role": "leader", "state": "running", "api_url": "http://10.0.0.1:8008/patroni",
   "host": "10.0.0.1", "port": 5432, "timeline": 1},
  {"name": "pg2", "role": "replica", "state": "running", "api_url": "http://10.0.0.2:8008/patroni",
   "host": "10.0.0.2", "port": 5432, "timeline": 1}]})";
inline constexpr const char* k_pg1_primary = R"({"state": "running", "role": "primary",
  "patroni": {"version": "4.1.4", "scope": "demo", "name": "pg1"}})";

// That cluster's configuration: both members' REST APIs, the check user.
inline config::PostgresCluster two_member_cluster() {
  config::PostgresCluster c;
  c.name = "demo";
  c.patroni = {"http://10.0.0.1:8008", "http://10.0.0.2:8008"};
  c.dbname = "postgres";
  c.user = "healthcheck";
  return c;
}

// Its writer backend, pg_write, at the default settings.
inline config::Backend two_member_writer() {
  config::Backend b;
  b.name = "pg_write";
  b.cluster = "demo";
  b.role = config::Role::primary;
  return b;
}

} // namespace dbcheck::testing
