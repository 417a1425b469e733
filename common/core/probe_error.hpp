#pragma once
// How asking a peer can fail, classified so the core can decide without parsing messages.

#include "verdict.hpp"

#include <string>

namespace dbcheck::core {

// Why asking one peer failed.
struct ProbeError {
  Failure kind = Failure::network; // network, timeout, protocol, auth, not_ready or saturated
  std::string detail;              // one line, no secrets: what the peer or the OS said
  // The server's own error code when it answered with an error: PostgreSQL's SQLSTATE
  // ("53300"), Redis's error prefix ("MISCONF"); else empty.
  std::string code;
};

} // namespace dbcheck::core
