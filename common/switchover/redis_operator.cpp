// The Redis operations of a switchover (redis_operator.hpp).
#include "redis_operator.hpp"

#include <core/redis_replies.hpp>
#include <probe/async.hpp>
#include <probe/redis_check.hpp>
#include <util/format.hpp>

#include <future>

namespace dbcheck::switchover {

using core::FailoverSent;
using probe::auth_command;
using probe::Deadline;
using probe::k_grace;
using probe::RedisCommand;
using probe::sentinel_majority;
using probe::spawn;

RedisOperator::RedisOperator(const config::RedisCluster& c, Driver& d, Operator op,
                             util::HostPort old)
    : m_c(c), m_d(d), m_op(std::move(op)), m_old(std::move(old)) {}

tl::expected<core::RespValue, std::string> RedisOperator::call(const util::HostPort& addr,
                                                               const config::RedisTls& tls,
                                                               const RedisCommand& command,
                                                               const Deadline& deadline) {
  auto link = m_d.peers()->redis(addr, tls);
  if (auto opened = link->open(deadline); !opened) {
    return tl::make_unexpected(opened.error().detail);
  }
  auto commands = auth_command(m_op.user, m_op.password.reveal());
  const std::size_t n_auth = commands.size();
  commands.push_back(command);
  auto replies = link->pipeline(commands, deadline);
  if (!replies) {
    return tl::make_unexpected(replies.error().detail);
  }
  for (std::size_t i = 0; i < n_auth; ++i) {
    if ((*replies)[i].type == core::RespValue::Type::error) {
      return tl::make_unexpected("AUTH: " + (*replies)[i].str);
    }
  }
  const core::RespValue& last = replies->back();
  if (last.type == core::RespValue::Type::error) {
    const std::string name = command.size() > 1 ? command[0] + " " + command[1] : command.at(0);
    return tl::make_unexpected(util::format("{}: {}", name, last.str));
  }
  return last;
}

tl::expected<void, std::string> RedisOperator::pause(long long ms, const Deadline& deadline) {
  if (auto r = call(m_old, m_c.tls, {"CLIENT", "PAUSE", std::to_string(ms), "WRITE"}, deadline);
      !r) {
    return tl::make_unexpected(r.error());
  }
  return {};
}

tl::expected<void, std::string> RedisOperator::unpause() {
  if (auto r = call(m_old, m_c.tls, {"CLIENT", "UNPAUSE"}, Deadline{m_d.now() + k_unpause_budget});
      !r) {
    return tl::make_unexpected(r.error());
  }
  return {};
}

tl::expected<core::RedisRole, std::string> RedisOperator::role(const util::HostPort& node,
                                                               const Deadline& deadline) {
  auto r = call(node, m_c.tls, {"ROLE"}, deadline);
  if (!r) {
    return tl::make_unexpected(r.error());
  }
  auto role = core::parse_role(*r);
  if (!role) {
    return tl::make_unexpected(role.error().detail);
  }
  return *role;
}

FailoverReply RedisOperator::failover(const util::HostPort& sentinel, const Deadline& deadline) {
  auto link = m_d.peers()->redis(sentinel, m_c.sentinel_tls);
  if (auto opened = link->open(deadline); !opened) {
    return {FailoverSent::refused, opened.error().detail};
  }
  if (auto auth = auth_command(m_op.user, m_op.password.reveal()); !auth.empty()) {
    auto replies = link->pipeline(auth, deadline);
    if (!replies) {
      return {FailoverSent::refused, replies.error().detail};
    }
    if (replies->front().type == core::RespValue::Type::error) {
      return {FailoverSent::refused, "AUTH: " + replies->front().str};
    }
  }
  auto replies = link->pipeline({{"SENTINEL", "FAILOVER", m_c.master_name}}, deadline);
  if (!replies) {
    return {FailoverSent::unknown, replies.error().detail};
  }
  const core::RespValue& reply = replies->front();
  const FailoverSent sent = core::failover_sent_for(reply);
  if (reply.type == core::RespValue::Type::error) {
    return {sent, "SENTINEL FAILOVER: " + reply.str};
  }
  return {sent, "OK"};
}

std::vector<util::HostPort> RedisOperator::sentinels_naming(const util::HostPort& master,
                                                            const Deadline& deadline) {
  std::vector<std::future<core::SentinelTally>> futures;
  for (const auto& s : m_c.sentinels) {
    config::RedisCluster one = m_c;
    one.sentinels = {s};
    futures.push_back(spawn(
        [peers = m_d.peers(), one, deadline] { return sentinel_majority(peers, one, deadline); }));
  }
  std::vector<util::HostPort> out;
  for (std::size_t i = 0; i < futures.size(); ++i) {
    if (futures[i].wait_until(deadline.at() + k_grace) != std::future_status::ready) {
      continue;
    }
    const core::SentinelTally t = futures[i].get();
    if (t.majority && util::same_endpoint(*t.majority, master)) {
      out.push_back(m_c.sentinels[i]);
    }
  }
  return out;
}

tl::expected<std::vector<core::SentinelReplica>, std::string> RedisOperator::list_replicas() {
  std::string why_none;
  for (const auto& s : m_c.sentinels) {
    auto reply = call(s, m_c.sentinel_tls, {"SENTINEL", "REPLICAS", m_c.master_name}, m_d.step());
    if (reply) {
      return core::parse_sentinel_replicas(*reply);
    }
    why_none +=
        util::format("{}{}: {}", why_none.empty() ? "" : "; ", util::to_string(s), reply.error());
  }
  if (why_none.empty()) {
    return std::vector<core::SentinelReplica>{}; // no Sentinel configured: nothing listed
  }
  return tl::make_unexpected("no Sentinel listed the replicas: " + why_none);
}

tl::expected<void, std::string> RedisOperator::make_replica(const util::HostPort& master,
                                                            const Deadline& by, Driver* driver) {
  probe::Peers& peers = *m_d.peers();
  const std::string old = util::to_string(m_old);
  if (auto r = call(m_old, m_c.tls, {"REPLICAOF", master.host, std::to_string(master.port)},
                    step_within(peers, by));
      !r) {
    return tl::make_unexpected(util::format("REPLICAOF on {} failed: {}", old, r.error()));
  }
  std::string seen;
  const WaitEnd demoted = wait_for(peers, by, driver, [&] {
    auto role = this->role(m_old, step_within(peers, by));
    if (!role) {
      seen = role.error();
      return false;
    }
    seen = core::describe(*role);
    return !role->master && util::same_endpoint(role->master_addr, master);
  });
  if (demoted != WaitEnd::done) {
    return tl::make_unexpected(util::format("{} did not become a replica of {} in time (last: {})",
                                            old, util::to_string(master), seen));
  }
  return {};
}

} // namespace dbcheck::switchover
