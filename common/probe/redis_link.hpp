#pragma once
// One Redis/Sentinel connection whose every step honours a deadline (hiredis 0.14, non-blocking).
//
// hiredis 0.14 bounds only connect() in its blocking API, and a read timeout there is per
// read(): a peer trickling one byte a second would never time out. So the socket is driven
// here with poll() against one absolute deadline.

#include "deadline.hpp"

#include <core/probe_error.hpp>
#include <core/resp.hpp>
#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

struct redisContext; // hiredis, kept out of this header
struct redisReply;

namespace dbcheck::probe {

using RedisCommand = std::vector<std::string>; // argv, binary-safe

// An open connection (RAII: redisFree on destruction); every call bounded by a Deadline.
class RedisLink {
public:
  // Connects within `deadline`. Use an IP literal: hiredis resolves names without a timeout.
  static tl::expected<RedisLink, core::ProbeError> connect(const util::HostPort& address,
                                                           const Deadline& deadline);

  // Sends `commands` in one write (pipelined) and returns one reply per command, in order.
  // Error replies are replies (RespValue::Type::error), not failures; failures are I/O,
  // protocol and deadline problems.
  tl::expected<std::vector<core::RespValue>, core::ProbeError>
  pipeline(const std::vector<RedisCommand>& commands, const Deadline& deadline);

  // Sends one command without waiting for its reply (SUBSCRIBE, PSUBSCRIBE).
  tl::expected<void, core::ProbeError> send(const RedisCommand& command, const Deadline& deadline);

  // The next reply or pushed message; nullopt when none arrived before `deadline` (not an
  // error: a quiet pub/sub channel).
  tl::expected<std::optional<core::RespValue>, core::ProbeError> next(const Deadline& deadline);

  RedisLink(RedisLink&&) noexcept = default;
  RedisLink& operator=(RedisLink&&) noexcept = default;
  ~RedisLink();

private:
  explicit RedisLink(redisContext* ctx);
  struct Closer {
    void operator()(redisContext* c) const;
  };
  std::unique_ptr<redisContext, Closer> m_ctx;
};

// The AUTH command for `user` (may be empty: password-only AUTH) and `password`; no command
// when both are empty.
std::vector<RedisCommand> auth_command(const std::string& user, const std::string& password);

// A hiredis reply tree as plain data: what pipeline() and next() return (and what the
// redis_reply fuzz target feeds to the parsers).
core::RespValue to_resp_value(const redisReply& reply);

// A command as text for logs and explain, with AUTH's password replaced by ***.
std::string redacted(const RedisCommand& command);

} // namespace dbcheck::probe
