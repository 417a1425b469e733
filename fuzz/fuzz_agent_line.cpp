// agent/agent_reply: the agent-send line HAProxy (or anyone) writes to the agent port, and the
// one-line reply built around the name it carries.
#include "agent_reply.hpp"
#include "fuzz_check.hpp"

using dbcheck::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const std::string_view line = dbcheck::fuzz::as_text(data, size);
  const std::string name = dbcheck::agent::backend_from_request(line);
  require(name.find_first_of("/\r\n") == std::string::npos, "the name stops at '/', CR or LF");
  require(name.empty() || (name.front() != ' ' && name.front() != '\t' && name.back() != ' ' &&
                           name.back() != '\t'),
          "the name is trimmed");
  require(line.find(name) != std::string_view::npos, "the name is part of the line");

  // The name reaches HAProxy in "down #unknown backend <name>" and in drain reasons: whatever
  // it holds, the reply stays one short line that HAProxy parses up to its newline.
  dbcheck::agent::ReplyInput unknown;
  unknown.known = false;
  unknown.backend = name;
  dbcheck::agent::ReplyInput draining;
  draining.draining = true;
  draining.drain_reason = name;
  dbcheck::agent::ReplyInput failing;
  failing.reported = {dbcheck::core::State::down, dbcheck::core::Failure::protocol, name};
  for (const auto& in : {unknown, draining, failing}) {
    const std::string reply = dbcheck::agent::agent_reply(in);
    require(!reply.empty() && reply.back() == '\n', "a reply ends with a newline");
    require(reply.find_first_of("\r\n") == reply.size() - 1, "a reply is one line");
    require(reply.size() <= 240, "a reply is short");
  }
  return 0;
}
