#pragma once
// The Redis operations of a switchover, each a question to the old master or a Sentinel with
// the operator's credentials: CLIENT PAUSE and UNPAUSE, ROLE, SENTINEL FAILOVER, which Sentinels
// name the master, the replicas they list, and REPLICAOF watched with ROLE. Every peer and the
// clock are reached through the driver's probe::Peers; the phases that use them and the release of
// the old master are redis_switchover.cpp's.

#include "driver.hpp"

#include <config/config.hpp>
#include <core/redis_replies.hpp>
#include <core/redis_switchover_plan.hpp>
#include <core/resp.hpp>
#include <probe/redis_link.hpp>
#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <string>
#include <vector>

namespace dbcheck::switchover {

// One SENTINEL FAILOVER's outcome and what was said (the error, or "OK").
struct FailoverReply {
  core::FailoverSent sent = core::FailoverSent::refused;
  std::string text;
};

// --- Interface ---

// The operations on `c` as the operator `op`, with `old` the master being switched away from.
class RedisOperator {
public:
  // Acts on `c` (its old master `old`) as `op`, through `d`'s peers; `d` outlives it.
  RedisOperator(const config::RedisCluster& c, Driver& d, Operator op, util::HostPort old);

  // `command` on `addr` after AUTH, by `deadline`: its reply, or the error ("AUTH: ...",
  // "CLIENT PAUSE: ...", the link's own) as text.
  tl::expected<core::RespValue, std::string> call(const util::HostPort& addr,
                                                  const config::RedisTls& tls,
                                                  const probe::RedisCommand& command,
                                                  const probe::Deadline& deadline);

  // CLIENT PAUSE `ms` WRITE on the old master.
  tl::expected<void, std::string> pause(long long ms, const probe::Deadline& deadline);

  // CLIENT UNPAUSE on the old master, within k_unpause_budget.
  tl::expected<void, std::string> unpause();

  // ROLE on the data node `node`, parsed; or why it could not be asked or read.
  tl::expected<core::RedisRole, std::string> role(const util::HostPort& node,
                                                  const probe::Deadline& deadline);

  // SENTINEL FAILOVER on `sentinel`, AUTH first in its own round trip so that a lost reply can
  // only mean a FAILOVER that may have been accepted; its reply as core::failover_sent_for
  // reads it.
  FailoverReply failover(const util::HostPort& sentinel, const probe::Deadline& deadline);

  // The configured Sentinels that each name `master` as a vote right now. Each is asked alone
  // (sentinel_majority over that one Sentinel, so the check's own rules decide what counts as a
  // vote: a settled answer naming exactly that address), all at once.
  std::vector<util::HostPort> sentinels_naming(const util::HostPort& master,
                                               const probe::Deadline& deadline);

  // SENTINEL REPLICAS from the first configured Sentinel that answers (one step each), or why
  // none did.
  tl::expected<std::vector<core::SentinelReplica>, std::string> list_replicas();

  // REPLICAOF `master` on the old master, then ROLE until it names `master` (by `by`; with a
  // driver, an interruption stops the wait); or why it did not.
  tl::expected<void, std::string> make_replica(const util::HostPort& master,
                                               const probe::Deadline& by, Driver* driver);

private:
  const config::RedisCluster& m_c;
  Driver& m_d;
  Operator m_op;
  util::HostPort m_old;
};

} // namespace dbcheck::switchover
