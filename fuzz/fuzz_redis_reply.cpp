// Raw RESP bytes -> probe::ReplyReader (the reader RedisLink uses: core::ReplyBounds' caps,
// then hiredis's reader), whole and in small chunks -> probe::to_resp_value ->
// core's parsers (ROLE, PING, SENTINEL GET-MASTER-ADDR-BY-NAME / MASTER / REPLICAS, error
// replies) -> the Sentinel tally, the writer/replica verdicts and the switchover's plan. The
// project code under test stays in probe/ and core/.
#include "fuzz_check.hpp"

#include <core/redis_replies.hpp>
#include <core/redis_switchover_plan.hpp>
#include <core/redis_verdict.hpp>
#include <core/sentinel_vote.hpp>
#include <probe/redis_link.hpp>

#include <algorithm>
#include <memory>
#include <string>
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

bool same(const RespValue& a, const RespValue& b) {
  if (a.type != b.type || a.str != b.str || a.integer != b.integer ||
      a.elements.size() != b.elements.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.elements.size(); ++i) {
    if (!same(a.elements[i], b.elements[i])) {
      return false;
    }
  }
  return true;
}

// What a link reads from `bytes` arriving `chunk` bytes at a time: the replies, and the error
// that ended them ("" when the stream simply ran out).
struct Decoded {
  std::vector<RespValue> replies;
  std::string error;
};

// Decodes `bytes` through the product's reader (probe::ReplyReader: the caps of
// core::ReplyBounds in front of hiredis's reader), as RedisLink::next reads a socket. No cap of
// the harness's own: an announced size the product lets through reaches hiredis's calloc, and
// libFuzzer's malloc limit (-rss_limit_mb) reports it.
Decoded decode(std::string_view bytes, std::size_t chunk) {
  Decoded out;
  probe::ReplyReader reader;
  for (std::size_t i = 0; i < bytes.size(); i += chunk) {
    reader.feed(bytes.substr(i, chunk));
    for (;;) {
      auto r = reader.next();
      if (!r) {
        out.error = r.error().detail;
        require(r.error().kind == Failure::protocol || r.error().kind == Failure::network,
                "a reader error is a protocol (or allocation) failure");
        require(!out.error.empty(), "a reader error says why");
        return out;
      }
      if (!*r) {
        break;
      }
      out.replies.push_back(std::move(**r));
    }
  }
  return out;
}

std::vector<RespValue> decode_checked(std::string_view bytes) {
  const Decoded whole = decode(bytes, std::max<std::size_t>(bytes.size(), 1));
  // The caps hold whatever the chunking: the same replies and the same end, read at once or a
  // few bytes at a time (a socket gives any split).
  const Decoded split = decode(bytes, 1 + bytes.size() % 5);
  require(whole.error == split.error, "the same end however the bytes arrive");
  require(whole.replies.size() == split.replies.size(), "the same replies however they arrive");
  for (std::size_t i = 0; i < whole.replies.size(); ++i) {
    require(same(whole.replies[i], split.replies[i]), "the same replies however they arrive");
  }
  return whole.replies;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const std::vector<RespValue> replies = decode_checked(dbcheck::fuzz::as_text(data, size));
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
