#include "sentinel_events.hpp"

#include "redis_link.hpp"

#include <core/sentinel_event.hpp>
#include <util/format.hpp>

#include <chrono>

namespace dbcheck::probe {
namespace {

using namespace std::chrono_literals;

// The text of a bulk/status string element, or "".
std::string text(const core::RespValue& v) {
  return v.type == core::RespValue::Type::string || v.type == core::RespValue::Type::status
             ? v.str
             : std::string{};
}

} // namespace

const std::vector<std::string>& sentinel_event_channels() {
  // Every step of a failover, from its first sign (+try-failover) to the announcement
  // (+switch-master), and its abort: the agent takes the old master out at the first one.
  static const std::vector<std::string> k = {
      "+try-failover",     "+elected-leader", "+failover-state-*",
      "+selected-slave",   "+promoted-slave", "+switch-master",
      "-failover-abort-*", "+sdown",          "+odown"};
  return k;
}

SentinelWatcher::SentinelWatcher(config::RedisCluster cluster, SentinelEventFn on_event)
    : m_cluster(std::move(cluster)), m_on_event(std::move(on_event)) {}

SentinelWatcher::~SentinelWatcher() {
  stop();
}

void SentinelWatcher::start() {
  for (const auto& s : m_cluster.sentinels) {
    m_threads.emplace_back([this, s] { watch(s); });
  }
}

void SentinelWatcher::stop() {
  m_stop = true;
  for (auto& t : m_threads) {
    if (t.joinable()) {
      t.join();
    }
  }
  m_threads.clear();
}

void SentinelWatcher::watch(const util::HostPort& sentinel) {
  const std::string who = util::to_string(sentinel);
  while (!m_stop) {
    auto link =
        RedisLink::connect(sentinel, Deadline::in(util::Duration{500}), &m_cluster.sentinel_tls);
    bool ok = link.has_value();
    // AUTH, then one PSUBSCRIBE per channel: an ACL written for an older dbcheck that lacks
    // a channel refuses that channel only, not the whole subscription.
    std::size_t auth_replies = 0;
    if (ok) {
      std::vector<RedisCommand> cmds =
          auth_command(m_cluster.sentinel_user.value_or(""), m_cluster.sentinel_password.reveal());
      auth_replies = cmds.size();
      for (const auto& channel : sentinel_event_channels()) {
        cmds.push_back({"PSUBSCRIBE", channel});
      }
      for (const auto& c : cmds) {
        ok = ok && link->send(c, Deadline::in(util::Duration{500})).has_value();
      }
      if (ok) {
        ++m_connects;
      }
    }
    const std::size_t setup_replies = auth_replies + sentinel_event_channels().size();
    std::size_t replies = 0;
    std::size_t subscribed = 0;
    std::string refused;
    while (ok && !m_stop) {
      auto msg = link->next(Deadline::in(util::Duration{250}));
      if (!msg) {
        m_on_event(who, "error", msg.error().detail);
        ok = false;
        break;
      }
      if (!*msg) {
        continue; // quiet: check m_stop and wait again
      }
      const core::RespValue& m = **msg;
      if (replies < setup_replies) {
        // The answers to AUTH and to each PSUBSCRIBE, in order.
        const std::size_t i = replies++;
        const bool error = m.type == core::RespValue::Type::error;
        if (error && i < auth_replies) {
          m_on_event(who, "error", m.str); // AUTH refused: say so, retry later
          ok = false;
          break;
        }
        if (error) {
          refused += (refused.empty() ? "" : ", ") + sentinel_event_channels()[i - auth_replies];
        } else if (i >= auth_replies) {
          ++subscribed;
        }
        if (replies == setup_replies && !refused.empty()) {
          m_on_event(who, "error",
                     util::format("channels refused (update the Sentinel ACL: dbcheck setup-sql "
                                  "sentinel): {}",
                                  refused));
        }
        if (replies == setup_replies && subscribed == 0) {
          ok = false; // nothing to listen to: retry later
        }
        continue;
      }
      // ["pmessage", pattern, channel, payload]; payload names the master first.
      if (m.type == core::RespValue::Type::array && m.elements.size() == 4 &&
          text(m.elements[0]) == "pmessage") {
        const std::string channel = text(m.elements[2]);
        const std::string payload = text(m.elements[3]);
        // Exactly our master's name: "cache" must not match a master called "cache2".
        const auto event = core::parse_sentinel_event(channel, payload);
        if (event && event->master_name == m_cluster.master_name) {
          m_on_event(who, channel, payload);
        }
      }
    }
    // Reconnect after a pause that still notices stop() quickly.
    for (int i = 0; i < 4 && !m_stop; ++i) {
      std::this_thread::sleep_for(250ms);
    }
  }
}

} // namespace dbcheck::probe
