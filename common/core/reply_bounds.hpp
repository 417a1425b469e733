#pragma once
// The size a Redis reply may announce, checked on the bytes before hiredis reads them.
//
// hiredis 0.14 believes every header it reads: "*1111111116\r\n" makes it calloc an array of
// 1,111,111,116 element pointers (8.9 GB) before one element has arrived, and "$1073741824\r\n"
// makes it keep every byte that follows until the whole gigabyte is in. Its `maxbuf` bounds only
// the buffer it keeps once a reply has been read. hiredis 1.x also reads RESP3, whose aggregates
// ("%N" a map of N pairs, "~N", ">N", "|N") allocate the same way, and it nests them as deep as
// the peer likes. A hostile or broken Sentinel could so make a check, or the agent, allocate
// without bound. The link scans the stream with ReplyBounds first (RESP2, tracking nesting and
// lengths exactly as hiredis 0.14's reader parses them) and feeds hiredis only the bytes before a
// reply that breaks a cap. dbcheck never asks for RESP3 (no HELLO 3), so a RESP3 type byte, or
// a nest deeper than hiredis 0.14 reads, is refused here whichever hiredis is linked: one
// grammar to bound, the one both versions read alike.

#include <tl/expected.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dbcheck::core {

// The most one top-level reply may announce: an array counts with everything nested in it.
//
// dbcheck asks for AUTH, PING, ROLE, SENTINEL GET-MASTER-ADDR-BY-NAME / MASTER / REPLICAS,
// CLIENT PAUSE and PSUBSCRIBE, never INFO or a key. The largest of these, SENTINEL REPLICAS,
// is about 45 short fields (about 1.5 KB) per replica; ROLE on a master is 3 elements per
// replica; a pub/sub message is 4 short strings. So 65536 elements and 4 MiB are more than a
// thousand replicas' worth, and one reply then costs at most about 16 MiB (hiredis's buffer,
// which may double as it grows, the strings' copies, and 65536 reply objects and pointers),
// where an unchecked header costs what the peer names.
struct ReplyCaps {
  long long max_elements = 65536;          // array elements, summed over the reply's arrays
  long long max_bytes = 4LL * 1024 * 1024; // every byte of the reply, headers included
};

// Why the stream was refused, and how much of the last chunk may still go to hiredis.
struct ReplyRefusal {
  std::size_t accepted = 0; // bytes of the chunk before the byte that broke a cap
  std::string reason;       // "reply announces 1111111116 elements, more than the 65536 allowed"
};

// The scanner of one connection's incoming byte stream (replies back to back, any chunking).
class ReplyBounds {
public:
  // --- Interface ---

  // A scanner at the start of a stream, with `caps`.
  explicit ReplyBounds(ReplyCaps caps = {}) : m_caps(caps) {}

  // Scans the next `bytes` of the stream. Returns nothing when every byte may go to hiredis, or
  // the refusal: the reply that broke a cap, and how many bytes of `bytes` precede the byte that
  // did. Once refused, every later chunk is refused whole, for the same reason (the stream
  // cannot be resynchronised). A RESP3 type byte, or an array nested deeper than 8, is refused.
  // Any other byte that is no RESP type is let through, so hiredis reports it in its own words
  // (every version refuses it); the byte cap still counts every byte after it.
  tl::expected<void, ReplyRefusal> scan(std::string_view bytes);

private:
  enum class State { type, simple_line, length_line, body, opaque };

  // The end of a length line ("$N" or "*N"); a reason when it breaks a cap.
  std::string end_length_line();
  // One item (a string, integer, nil or empty array) is complete: counts it in its array.
  void complete_item();

  ReplyCaps m_caps;
  State m_state = State::type;
  char m_kind = 0;               // '$' or '*' while reading a length line
  std::string m_length;          // the length line's text up to its first '\r'
  bool m_length_cr = false;      // a '\r' ended m_length (hiredis stops reading there)
  bool m_prev_cr = false;        // the last byte of the current line was '\r'
  long long m_body_left = 0;     // bytes of a bulk string (and its "\r\n") still to come
  long long m_bytes = 0;         // bytes of the current top-level reply so far
  long long m_elements = 0;      // elements its arrays announced so far
  std::vector<long long> m_open; // elements still to come in each open array, outermost first
  std::string m_refused;         // why the stream was refused, once it was
};

} // namespace dbcheck::core
