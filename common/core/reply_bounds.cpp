#include "reply_bounds.hpp"

#include <util/format.hpp>

#include <algorithm>

namespace dbcheck::core {
namespace {

// hiredis 0.14 reads at most this many nested arrays (rstack[9]: "No support for nested multi
// bulk replies with depth > 7" when one more opens); hiredis 1.x grows its stack for any depth,
// so the limit is enforced here.
constexpr std::size_t k_max_open = 8;

// RESP3's type bytes (map, set, push, attribute, verbatim string, blob error, double, null,
// boolean, big number): hiredis 1.x reads them, 0.14 refuses them, a RESP2 session never has them.
constexpr std::string_view k_resp3_types = "%~>|=!,_#(";

// Length lines longer than this are refused: 18 digits and a sign cannot overflow a long long
// in hiredis's readLongLong (which does not check), so the value read here is the one it reads.
constexpr std::size_t k_max_length_text = 19;

// The value hiredis 0.14's readLongLong gives a length line's text: an optional sign, then
// digits; any other character makes it -1 (which it then reads as nil).
long long hiredis_length(std::string_view text) {
  long long sign = 1;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    sign = text[0] == '-' ? -1 : 1;
    text.remove_prefix(1);
  }
  long long v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') {
      return -1;
    }
    v = v * 10 + (c - '0');
  }
  return sign * v;
}

} // namespace

void ReplyBounds::complete_item() {
  while (!m_open.empty()) {
    if (--m_open.back() > 0) {
      return;
    }
    m_open.pop_back(); // that array is complete: an item of its parent
  }
  m_bytes = 0; // a top-level reply is complete: the next one has the whole allowance
  m_elements = 0;
}

std::string ReplyBounds::end_length_line() {
  const long long n = hiredis_length(m_length);
  if (m_kind == '$') {
    if (n < 0) {
      complete_item(); // nil
      return {};
    }
    if (n > m_caps.max_bytes) {
      return util::format("reply announces a {}-byte string, more than the {} bytes allowed", n,
                          m_caps.max_bytes);
    }
    if (m_bytes + n + 2 > m_caps.max_bytes) {
      return util::format("reply announces more than the {} bytes allowed in all",
                          m_caps.max_bytes);
    }
    m_body_left = n + 2; // hiredis skips the two bytes after the string, whatever they are
    m_state = State::body;
    return {};
  }
  if (n == -1) {
    complete_item(); // nil array
    return {};
  }
  if (n < 0) {
    // hiredis 0.14 would hand a negative count to calloc (as an enormous size_t).
    return util::format("reply announces {} elements", n);
  }
  if (n > m_caps.max_elements) {
    return util::format("reply announces {} elements, more than the {} allowed", n,
                        m_caps.max_elements);
  }
  if (m_elements + n > m_caps.max_elements) {
    return util::format("reply announces {} elements in all, more than the {} allowed",
                        m_elements + n, m_caps.max_elements);
  }
  if (n == 0) {
    complete_item();
    return {};
  }
  m_elements += n;
  m_open.push_back(n);
  return {};
}

tl::expected<void, ReplyRefusal> ReplyBounds::scan(std::string_view bytes) {
  if (!m_refused.empty()) {
    return tl::make_unexpected(ReplyRefusal{0, m_refused});
  }
  const auto refuse = [&](std::size_t at, std::string why) {
    m_refused = std::move(why);
    return tl::make_unexpected(ReplyRefusal{at, m_refused});
  };
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (m_state == State::body) {
      // A bulk string's bytes: skipped in one step (already counted against the cap).
      const auto take = std::min<long long>(m_body_left, static_cast<long long>(bytes.size() - i));
      m_body_left -= take;
      m_bytes += take;
      i += static_cast<std::size_t>(take) - 1;
      if (m_body_left == 0) {
        m_state = State::type;
        complete_item();
      }
      continue;
    }
    if (++m_bytes > m_caps.max_bytes) {
      return refuse(i,
                    util::format("reply holds more than the {} bytes allowed", m_caps.max_bytes));
    }
    const char c = bytes[i];
    switch (m_state) {
    case State::type:
      m_prev_cr = false;
      if (c == '*' && m_open.size() >= k_max_open) {
        return refuse(i, util::format("reply nests arrays more than {} deep", k_max_open));
      }
      if (k_resp3_types.find(c) != std::string_view::npos) {
        return refuse(i, util::format("reply has RESP3 type '{}', in a RESP2 session", c));
      }
      if (c == '$' || c == '*') {
        m_state = State::length_line;
        m_kind = c;
        m_length.clear();
        m_length_cr = false;
      } else if (c == '+' || c == '-' || c == ':') {
        m_state = State::simple_line;
      } else {
        m_state = State::opaque; // hiredis refuses this byte itself, with its own reason
      }
      break;
    case State::simple_line:
      if (c == '\n' && m_prev_cr) {
        m_state = State::type;
        complete_item();
      }
      m_prev_cr = c == '\r';
      break;
    case State::length_line:
      if (c == '\n' && m_prev_cr) {
        m_state = State::type;
        if (std::string why = end_length_line(); !why.empty()) {
          return refuse(i, std::move(why));
        }
      } else if (c == '\r') {
        m_length_cr = true; // readLongLong stops at the first '\r'
      } else if (!m_length_cr) {
        m_length += c;
        if (m_length.size() > k_max_length_text) {
          return refuse(i, util::format("reply announces a length of more than {} characters",
                                        k_max_length_text));
        }
      }
      m_prev_cr = c == '\r';
      break;
    case State::body:
    case State::opaque:
      break;
    }
  }
  return {};
}

} // namespace dbcheck::core
