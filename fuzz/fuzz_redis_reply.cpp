// Raw RESP bytes -> hiredis's reader (the one RedisLink uses) -> probe::to_resp_value ->
// core's parsers (ROLE, PING, SENTINEL GET-MASTER-ADDR-BY-NAME / MASTER / REPLICAS, error
// replies) -> the Sentinel tally, the writer/replica verdicts and the switchover's plan. The test
// harness includes hiredis's header to drive the reader; the project code under test stays in
// probe/ and core/.
#include "fuzz_check.hpp"

#include <core/redis_replies.hpp>
#include <core/redis_switchover_plan.hpp>
#include <core/redis_verdict.hpp>
#include <core/sentinel_vote.hpp>
#include <probe/redis_link.hpp>

#include <hiredis/hiredis.h>

#include <algorithm>
#include <memory>
#include <vector>

using dbcheck::fuzz::require;
using namespace dbcheck;
using namespace dbcheck::core;

namespace {

bool is_text(const RespValue& v) {
  return v.type == RespValue::Type::string || v.type == RespValue::Type::status;
}

// What each parser must hold to, whatever the reply.
void check_parsers(const RespValue& v) {
  if (v.type == RespValue::Type::error) {
    const ProbeError e = classify_redis_error(v.str);
    require(e.detail == v.str, "an error reply's text is kept");
    require(!parse_role(v) && parse_role(v).error().kind == e.kind, "ROLE classifies errors");
    require(!parse_ping(v) && parse_ping(v).error().kind == e.kind, "PING classifies errors");
  }
  if (const auto role = parse_role(v)) {
    require(v.type == RespValue::Type::array && !v.elements.empty(), "ROLE is an array");
    if (!role->master) {
      require(role->master_addr.port != 0 && !role->master_addr.host.empty(),
              "a replica names its master");
    }
    require(!describe(*role).empty(), "a role describes itself");
  }
  require(parse_ping(v).has_value() == (is_text(v) && v.str == "PONG"), "PING passes on PONG");
  if (const auto addr = parse_master_addr(v)) {
    require(addr->has_value() == (v.type != RespValue::Type::nil), "nil means unknown name");
    if (*addr) {
      require((*addr)->port != 0 && !(*addr)->host.empty(), "a master address is complete");
    }
  }
  if (parse_sentinel_master(v)) {
    require(v.type == RespValue::Type::array && v.elements.size() % 2 == 0,
            "SENTINEL MASTER is a flat field/value array");
  }
  const auto replicas = parse_sentinel_replicas(v); // `dbcheck switchover` picks from these
  require(replicas.size() <= v.elements.size(), "at most one replica per entry");
  for (const auto& r : replicas) {
    require(r.addr.port != 0 && !r.addr.host.empty(), "a replica address is complete");
    require(!replica_healthy(r) || r.link == "ok", "a healthy replica has its link");
  }
  // The switchover's plan over whatever the Sentinel listed: a plan only with a healthy replica
  // to promote, and only healthy replicas offered.
  RedisPlanInput in;
  in.master_name = "fuzz";
  in.old_master = dbcheck::util::HostPort{"10.0.0.1", 6379};
  in.replicas = replicas;
  const auto plan = plan_redis_switchover(in);
  const bool any_healthy = std::any_of(replicas.begin(), replicas.end(),
                                       [](const auto& r) { return replica_healthy(r); });
  require(plan.has_value() == any_healthy, "a plan exactly when a healthy replica is listed");
  if (plan) {
    require(!plan->eligible.empty() && plan->eligible.size() <= replicas.size(),
            "the plan offers only listed replicas");
  }
}

// hiredis 0.14 callocs an array's element vector from the declared count before any element
// arrives ("*1111111116\r\n": 8.9 GB). That is the library's allocation policy, not a parser
// of ours, and it would stop every run at libFuzzer's malloc limit: arrays declaring more
// elements than any reply we parse are refused the way hiredis refuses a failed allocation.
constexpr int k_max_array = 4096;
void* (*g_create_array)(const redisReadTask*, int) = nullptr;
redisReplyObjectFunctions g_bounded{};

void* bounded_array(const redisReadTask* task, int elements) {
  return elements > k_max_array ? nullptr : g_create_array(task, elements);
}

// Decodes every complete reply in `bytes` as RedisLink would read them off a socket.
std::vector<RespValue> decode(std::string_view bytes) {
  std::vector<RespValue> out;
  std::unique_ptr<redisReader, decltype(&redisReaderFree)> reader(redisReaderCreate(),
                                                                  &redisReaderFree);
  if (!reader) {
    return out;
  }
  if (g_create_array == nullptr) {
    g_bounded = *reader->fn; // hiredis's own reply builders, with the array one bounded
    g_create_array = g_bounded.createArray;
    g_bounded.createArray = bounded_array;
  }
  reader->fn = &g_bounded;
  if (redisReaderFeed(reader.get(), bytes.data(), bytes.size()) != REDIS_OK) {
    return out;
  }
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader.get(), &raw) != REDIS_OK || raw == nullptr) {
      return out; // a protocol error, or an incomplete reply: RedisLink reports or waits
    }
    std::unique_ptr<redisReply, decltype(&freeReplyObject)> reply(static_cast<redisReply*>(raw),
                                                                  &freeReplyObject);
    out.push_back(probe::to_resp_value(*reply));
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const std::vector<RespValue> replies = decode(dbcheck::fuzz::as_text(data, size));
  for (const RespValue& v : replies) {
    check_parsers(v);
  }
  // Replies in pairs are Sentinels' (GET-MASTER-ADDR-BY-NAME, MASTER) as ask_sentinel reads
  // them; a last odd reply is the node's ROLE. The input's size picks how many distinct
  // Sentinels answer (so some answer twice) and how many are configured (fewer or more).
  const std::size_t span = 1 + size % 4;
  std::vector<SentinelAnswer> answers;
  for (std::size_t i = 0; i + 1 < replies.size(); i += 2) {
    SentinelAnswer a{util::HostPort{"10.0.0.9", static_cast<std::uint16_t>(26379 + (i / 2) % span)},
                     tl::make_unexpected(ProbeError{Failure::protocol, "unset", ""})};
    if (auto addr = parse_master_addr(replies[i])) {
      SentinelView view;
      if (*addr) {
        auto master = parse_sentinel_master(replies[i + 1]);
        if (master) {
          view = *master;
        }
      }
      view.master = *addr;
      a.view = view;
    }
    answers.push_back(std::move(a));
  }
  std::vector<SentinelAnswer> once; // each Sentinel's first answer
  for (const auto& a : answers) {
    bool seen = false;
    for (const auto& o : once) {
      seen = seen || o.sentinel == a.sentinel;
    }
    if (!seen) {
      once.push_back(a);
    }
  }
  const std::size_t configured = (size / 4) % 6;
  const SentinelTally tally = tally_sentinels(answers, configured);
  const std::size_t electorate = std::max(configured, once.size());
  require(tally.needed == electorate / 2 + 1, "a majority of the configured or answering");
  require(tally.majority == tally_sentinels(once, configured).majority,
          "a Sentinel answering twice is counted once");
  if (tally.majority) {
    require(tally.majority_votes >= tally.needed, "a majority has the votes");
    require(votes_for(answers, *tally.majority) == tally.majority_votes, "votes are counted once");
    require(votes_for(answers, *tally.majority) <= once.size(), "no more votes than Sentinels");
  }
  RedisObservation obs{util::HostPort{"10.0.0.1", 6379}, answers, configured,
                       tl::make_unexpected(ProbeError{Failure::timeout, "no ROLE", ""}),
                       LagEstimate{0.0, "fuzz"}};
  if (replies.size() % 2 == 1) {
    obs.node_answer = parse_role(replies.back());
  }
  const Verdict writer = evaluate_redis_writer(obs, SaturationPolicy::down);
  if (writer.state == State::up) {
    require(obs.node_answer && obs.node_answer->master, "an up writer says ROLE master");
    require(votes_for(answers, obs.node) >= tally.needed, "an up writer has the majority");
    require(tally.failing_over.empty(), "no writer while a Sentinel fails the master over");
  }
  const Verdict reader = evaluate_redis_replica(obs, 1.0);
  if (reader.state == State::up) {
    require(obs.node_answer && !obs.node_answer->master, "an up replica says ROLE replica");
  }
  return 0;
}
