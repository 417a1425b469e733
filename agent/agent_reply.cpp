#include "agent_reply.hpp"

#include <util/format.hpp>

namespace dbcheck::agent {
namespace {

// HAProxy reads up to the first CR/LF and keeps the text after '#' as a description: keep it
// one printable line, and short (its buffer is 16 kB; a description is for people).
std::string reason_text(const std::string& reason) {
  constexpr std::size_t k_max = 200;
  std::string out;
  for (char c : reason) {
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? ' ' : c;
    if (out.size() >= k_max) {
      out += "...";
      break;
    }
  }
  return out;
}

// The reply with its " #reason", built below.
std::string agent_reply_with_reason(const ReplyInput& in);

} // namespace

std::string agent_reply(const ReplyInput& in) {
  std::string line = agent_reply_with_reason(in);
  if (!in.reasons) {
    if (const auto hash = line.find(" #"); hash != std::string::npos) {
      line.erase(hash, line.size() - hash - 1); // keep the newline
    }
  }
  return line;
}

std::string backend_from_request(std::string_view line) {
  const auto end = line.find_first_of("/\r\n");
  std::string_view name = line.substr(0, end);
  while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) {
    name.remove_prefix(1);
  }
  while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) {
    name.remove_suffix(1);
  }
  return std::string{name};
}

namespace {

std::string agent_reply_with_reason(const ReplyInput& in) {
  if (!in.known) {
    return util::format("down #unknown backend {}\n", reason_text(in.backend));
  }
  const core::Verdict& v = in.reported;
  if (in.draining) {
    // The full state on one line: a drained server still gets sticky traffic, so HAProxy must
    // keep hearing whether it is up.
    const bool up = !in.stale && v.state == core::State::up;
    return util::format("drain {} #{}\n", up ? "up" : "down", reason_text(in.drain_reason));
  }
  const std::string ready = in.send_ready ? "ready " : "";
  if (in.stale) {
    // A prober that stopped answering proves nothing: fail closed.
    return util::format("{}down #stale: no probe result for {:.1f}s\n", ready, in.age_s);
  }
  if (v.state == core::State::up) {
    if (v.failure == core::Failure::saturated || v.failure == core::Failure::lag ||
        v.failure == core::Failure::slow) {
      // Degraded but serving: keep it in, with less of the traffic.
      return util::format("{}up 50% #{}\n", ready, reason_text(v.reason));
    }
    if (v.failure != core::Failure::none) {
      return util::format("{}up 100% #{}\n", ready, reason_text(v.reason));
    }
    return util::format("{}up 100%\n", ready);
  }
  return util::format("{}down #{}\n", ready, reason_text(v.reason));
}

} // namespace

} // namespace dbcheck::agent
