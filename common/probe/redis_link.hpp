#pragma once
// One Redis/Sentinel connection whose every step honours a deadline (hiredis 0.14, non-blocking).
//
// hiredis 0.14 bounds only connect() in its blocking API, and a read timeout there is per
// read(): a peer trickling one byte a second would never time out. So the socket is driven
// here with poll() against one absolute deadline.

#include "deadline.hpp"
#include "tls_stream.hpp"

#include <core/probe_error.hpp>
#include <core/reply_bounds.hpp>
#include <core/resp.hpp>
#include <util/host_port.hpp>

#include <tl/expected.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct redisContext; // hiredis, kept out of this header
struct redisReader;
struct redisReply;

namespace dbcheck::probe {

using RedisCommand = std::vector<std::string>; // argv, binary-safe

// The reading half of a link: the bytes read off the socket go through core::ReplyBounds
// before hiredis's reader sees them, so no reply can make hiredis allocate more than the caps
// allow (core/reply_bounds.hpp). Also what the redis_reply fuzz target drives.
class ReplyReader {
public:
  // --- Interface ---

  // A reader at the start of a stream, refusing replies beyond `caps`.
  explicit ReplyReader(core::ReplyCaps caps = {});

  // Takes the next bytes of the stream. Bytes after a reply that breaks a cap are dropped; the
  // refusal is reported by next() once the replies before it have been taken.
  void feed(std::string_view bytes);

  // The next complete reply; nullopt when more bytes are needed. Errors (protocol, kind
  // protocol): hiredis's own ("Protocol error, got ..."), or the cap a reply broke ("reply
  // announces 1111111116 elements, more than the 65536 allowed"). Both are final.
  tl::expected<std::optional<core::RespValue>, core::ProbeError> next();

private:
  struct Free {
    void operator()(redisReader* r) const;
  };
  std::unique_ptr<redisReader, Free> m_reader;
  core::ReplyBounds m_bounds;
  std::string m_refused; // why the stream was cut, once a reply broke a cap
};

// An open connection (RAII: redisFree on destruction); every call bounded by a Deadline.
class RedisLink {
public:
  // Connects within `deadline`. A host name is resolved first, within `deadline` too
  // (name_resolver.hpp), and hiredis is handed the address: its own resolver has no timeout.
  // With `tls` enabled the link is a TLS session (tls_stream.hpp), verified within `deadline`.
  static tl::expected<RedisLink, core::ProbeError> connect(const util::HostPort& address,
                                                           const Deadline& deadline,
                                                           const config::RedisTls* tls = nullptr);

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

  // False once a TLS session failed fatally: the link must not go back to a cache (a plain
  // link's failures are judged by their kind, lease_retry.hpp).
  bool usable() const { return !m_tls || m_tls->usable(); }

  RedisLink(RedisLink&&) noexcept = default;
  RedisLink& operator=(RedisLink&&) noexcept = default;
  ~RedisLink();

private:
  explicit RedisLink(redisContext* ctx);
  struct Closer {
    void operator()(redisContext* c) const;
  };
  std::unique_ptr<redisContext, Closer> m_ctx; // connects, formats and writes; never reads
  std::optional<TlsStream> m_tls; // with TLS: reads and writes instead (freed before m_ctx)
  ReplyReader m_reader;
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
