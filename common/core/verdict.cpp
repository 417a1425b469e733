#include "verdict.hpp"

namespace dbcheck::core {

std::string_view to_string(State s) {
  switch (s) {
  case State::up:
    return "up";
  case State::down:
    return "down";
  case State::drain:
    return "drain";
  case State::maint:
    return "maint";
  }
  return "down";
}

std::string_view to_label(State s) {
  switch (s) {
  case State::up:
    return "UP";
  case State::down:
    return "DOWN";
  case State::drain:
    return "DRAIN";
  case State::maint:
    return "MAINT";
  }
  return "DOWN";
}

std::string_view to_string(Failure f) {
  switch (f) {
  case Failure::none:
    return "none";
  case Failure::network:
    return "network";
  case Failure::timeout:
    return "timeout";
  case Failure::protocol:
    return "protocol";
  case Failure::auth:
    return "auth";
  case Failure::not_ready:
    return "not_ready";
  case Failure::saturated:
    return "saturated";
  case Failure::unwritable:
    return "unwritable";
  case Failure::slow:
    return "slow";
  case Failure::identity:
    return "identity";
  case Failure::role:
    return "role";
  case Failure::lag:
    return "lag";
  case Failure::policy:
    return "policy";
  case Failure::config:
    return "config";
  case Failure::internal:
    return "internal";
  }
  return "protocol";
}

bool passes(const Verdict& v) {
  return v.state == State::up;
}

} // namespace dbcheck::core
