// The only file that includes hiredis.h (library_versions.cpp reads its version macros).
#include "redis_link.hpp"

#include "name_resolver.hpp"
#include "wait_fd.hpp"

#include <util/format.hpp>

#include <hiredis/hiredis.h>

#include <netinet/in.h>
#include <poll.h>
#include <string.h> // explicit_bzero
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace dbcheck::probe {
namespace {

core::ProbeError timeout_error(const char* during) {
  return {core::Failure::timeout,
          util::format("timeout: no answer before the deadline ({})", during), ""};
}

core::ProbeError io_error(const redisContext* c, const char* during) {
  const std::string what = c->errstr[0] != '\0' ? c->errstr : "connection error";
  const core::Failure kind =
      c->err == REDIS_ERR_PROTOCOL ? core::Failure::protocol : core::Failure::network;
  return {kind, util::format("{} ({})", what, during), ""};
}

// Queues `commands` and writes them all within `deadline` (one write for a pipeline); over
// `tls` when given, hiredis formatting the commands and OpenSSL sending them.
tl::expected<void, core::ProbeError> write_commands(redisContext* c, TlsStream* tls,
                                                    const std::vector<RedisCommand>& commands,
                                                    const Deadline& deadline) {
  std::string formatted;
  for (const RedisCommand& cmd : commands) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& a : cmd) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    if (tls != nullptr) {
      char* out = nullptr;
      // int in hiredis 0.14, long long in 1.x.
      const auto n =
          redisFormatCommandArgv(&out, static_cast<int>(argv.size()), argv.data(), lens.data());
      if (n < 0 || out == nullptr) {
        return tl::make_unexpected(core::ProbeError{
            core::Failure::internal, "cannot format a Redis command (queueing a command)", ""});
      }
      formatted.append(out, static_cast<std::size_t>(n));
      explicit_bzero(out, static_cast<std::size_t>(n)); // AUTH carries the password
      redisFreeCommand(out);
    } else if (redisAppendCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()) !=
               REDIS_OK) {
      return tl::make_unexpected(io_error(c, "queueing a command"));
    }
  }
  if (tls != nullptr) {
    auto written = tls->write(formatted, deadline);
    explicit_bzero(formatted.data(), formatted.size());
    return written;
  }
  int done = 0;
  while (done == 0) {
    if (redisBufferWrite(c, &done) != REDIS_OK) {
      return tl::make_unexpected(io_error(c, "sending"));
    }
    if (done == 0) {
      if (const Wait w = wait_fd(c->fd, POLLOUT, deadline); w != Wait::ready) {
        return tl::make_unexpected(w == Wait::timeout ? timeout_error("sending")
                                                      : io_error(c, "sending"));
      }
    }
  }
  return {};
}

// The address to hand hiredis for `address`: itself when its host is an IP literal, else the
// name resolved within `deadline` (an IPv4 address first, as hiredis would try it first).
tl::expected<util::HostPort, core::ProbeError> literal_address(const util::HostPort& address,
                                                               const Deadline& deadline) {
  if (util::is_ip_literal(address.host)) {
    return address;
  }
  const auto answers = resolve_names({address.host}, deadline);
  const auto& found = answers.front().addresses;
  if (!found || found->empty()) {
    const std::string why = found ? "the name has no address" : found.error();
    return tl::make_unexpected(core::ProbeError{
        deadline.expired() ? core::Failure::timeout : core::Failure::network,
        util::format("{} did not resolve: {} (connecting)", address.host, why), ""});
  }
  const auto v4 = std::find_if(found->begin(), found->end(), [](const std::string& a) {
    return a.find(':') == std::string::npos;
  });
  return util::HostPort{v4 != found->end() ? *v4 : found->front(), address.port};
}

} // namespace

void ReplyReader::Free::operator()(redisReader* r) const {
  redisReaderFree(r);
}

ReplyReader::ReplyReader(core::ReplyCaps caps) : m_reader(redisReaderCreate()), m_bounds(caps) {}

void ReplyReader::feed(std::string_view bytes) {
  if (!m_refused.empty() || !m_reader) {
    return;
  }
  std::size_t take = bytes.size();
  if (auto scanned = m_bounds.scan(bytes); !scanned) {
    take = scanned.error().accepted; // the replies before the refused one are still read
    m_refused = scanned.error().reason;
  }
  if (take > 0) {
    // A failure (hiredis already refused the stream, or out of memory) stays in the reader's
    // error state, which next() reports.
    redisReaderFeed(m_reader.get(), bytes.data(), take);
  }
}

tl::expected<std::optional<core::RespValue>, core::ProbeError> ReplyReader::next() {
  if (!m_reader) {
    return tl::make_unexpected(
        core::ProbeError{core::Failure::network, "cannot allocate a Redis reply reader", ""});
  }
  void* raw = nullptr;
  if (redisReaderGetReply(m_reader.get(), &raw) != REDIS_OK) {
    const redisReader* r = m_reader.get();
    return tl::make_unexpected(core::ProbeError{
        r->err == REDIS_ERR_PROTOCOL ? core::Failure::protocol : core::Failure::network,
        r->errstr[0] != '\0' ? r->errstr : "reply reader error", ""});
  }
  if (raw != nullptr) {
    std::unique_ptr<redisReply, decltype(&freeReplyObject)> guard(static_cast<redisReply*>(raw),
                                                                  &freeReplyObject);
    return std::optional<core::RespValue>{to_resp_value(*guard)};
  }
  if (!m_refused.empty()) {
    return tl::make_unexpected(core::ProbeError{core::Failure::protocol, m_refused, ""});
  }
  return std::optional<core::RespValue>{};
}

core::RespValue to_resp_value(const redisReply& reply) {
  switch (reply.type) {
  case REDIS_REPLY_STRING:
    return core::RespValue::string(std::string(reply.str, reply.len));
  case REDIS_REPLY_STATUS:
    return core::RespValue::status(std::string(reply.str, reply.len));
  case REDIS_REPLY_ERROR:
    return core::RespValue::error(std::string(reply.str, reply.len));
  case REDIS_REPLY_INTEGER:
    return core::RespValue::number(reply.integer);
  case REDIS_REPLY_ARRAY: {
    std::vector<core::RespValue> items;
    items.reserve(reply.elements);
    for (std::size_t i = 0; i < reply.elements; ++i) {
      items.push_back(to_resp_value(*reply.element[i]));
    }
    return core::RespValue::array(std::move(items));
  }
  default:
    return core::RespValue::nil();
  }
}

void RedisLink::Closer::operator()(redisContext* c) const {
  redisFree(c);
}

RedisLink::RedisLink(redisContext* ctx) : m_ctx(ctx) {}
RedisLink::~RedisLink() = default;

tl::expected<RedisLink, core::ProbeError> RedisLink::connect(const util::HostPort& address,
                                                             const Deadline& deadline,
                                                             const config::RedisTls* tls) {
  const auto literal = literal_address(address, deadline);
  if (!literal) {
    return tl::make_unexpected(literal.error());
  }
  redisContext* raw = redisConnectNonBlock(literal->host.c_str(), literal->port);
  if (raw == nullptr) {
    return tl::make_unexpected(
        core::ProbeError{core::Failure::network, "cannot allocate a Redis connection", ""});
  }
  RedisLink link(raw);
  if (raw->err != 0) {
    return tl::make_unexpected(io_error(raw, "connecting"));
  }
  const Wait w = wait_fd(raw->fd, POLLOUT, deadline);
  if (w == Wait::timeout) {
    return tl::make_unexpected(timeout_error("connecting"));
  }
  int so_error = 0;
  socklen_t len = sizeof so_error;
  if (w == Wait::error || ::getsockopt(raw->fd, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0 ||
      so_error != 0) {
    return tl::make_unexpected(core::ProbeError{
        core::Failure::network,
        util::format("{} (connecting)", std::strerror(so_error != 0 ? so_error : errno)), ""});
  }
  if (tls != nullptr && tls->enabled) {
    // The name the certificate must carry defaults to the address as configured or handed
    // out by a Sentinel, not what a name resolved to.
    auto session = TlsStream::connect(raw->fd, address.host, *tls, deadline);
    if (!session) {
      return tl::make_unexpected(session.error());
    }
    link.m_tls = std::move(*session);
  }
  return link;
}

tl::expected<std::vector<core::RespValue>, core::ProbeError>
RedisLink::pipeline(const std::vector<RedisCommand>& commands, const Deadline& deadline) {
  redisContext* c = m_ctx.get();
  if (auto written = write_commands(c, m_tls ? &*m_tls : nullptr, commands, deadline); !written) {
    return tl::make_unexpected(written.error());
  }
  std::vector<core::RespValue> replies;
  replies.reserve(commands.size());
  while (replies.size() < commands.size()) {
    auto reply = next(deadline);
    if (!reply) {
      return tl::make_unexpected(reply.error());
    }
    if (!*reply) {
      return tl::make_unexpected(timeout_error("waiting for a reply"));
    }
    replies.push_back(std::move(**reply));
  }
  return replies;
}

tl::expected<void, core::ProbeError> RedisLink::send(const RedisCommand& command,
                                                     const Deadline& deadline) {
  return write_commands(m_ctx.get(), m_tls ? &*m_tls : nullptr, {command}, deadline);
}

tl::expected<std::optional<core::RespValue>, core::ProbeError>
RedisLink::next(const Deadline& deadline) {
  redisContext* c = m_ctx.get();
  for (;;) {
    auto reply = m_reader.next();
    if (!reply) {
      core::ProbeError e = reply.error();
      e.detail += " (reading)";
      return tl::make_unexpected(std::move(e));
    }
    if (*reply) {
      return reply;
    }
    std::array<char, 16 * 1024> buf{};
    if (m_tls) {
      auto n = m_tls->read(buf.data(), buf.size(), deadline);
      if (!n) {
        return tl::make_unexpected(n.error());
      }
      if (*n == 0) {
        return std::optional<core::RespValue>{};
      }
      m_reader.feed({buf.data(), *n});
      continue;
    }
    const Wait w = wait_fd(c->fd, POLLIN, deadline);
    if (w == Wait::timeout) {
      return std::optional<core::RespValue>{};
    }
    if (w == Wait::error) {
      return tl::make_unexpected(io_error(c, "reading"));
    }
    // Read here rather than by redisBufferRead, so every byte passes ReplyBounds before
    // hiredis's reader allocates for it. Same outcomes and texts as redisBufferRead.
    const ssize_t n = ::read(c->fd, buf.data(), buf.size());
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      continue;
    }
    if (n <= 0) {
      return tl::make_unexpected(
          core::ProbeError{core::Failure::network,
                           util::format("{} (reading)", n == 0 ? "Server closed the connection"
                                                               : std::strerror(errno)),
                           ""});
    }
    m_reader.feed({buf.data(), static_cast<std::size_t>(n)});
  }
}

std::vector<RedisCommand> auth_command(const std::string& user, const std::string& password) {
  if (password.empty()) {
    return {};
  }
  if (user.empty()) {
    return {{"AUTH", password}};
  }
  return {{"AUTH", user, password}};
}

std::string redacted(const RedisCommand& command) {
  std::string out;
  for (std::size_t i = 0; i < command.size(); ++i) {
    const bool secret =
        !command.empty() && command[0] == "AUTH" && i == command.size() - 1 && i > 0;
    out += util::format("{}{}", out.empty() ? "" : " ", secret ? "***" : command[i]);
  }
  return out;
}

} // namespace dbcheck::probe
