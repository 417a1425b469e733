#include "agent_app.hpp"

#include <util/process_guard.hpp>
#include <util/thread_memory.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
  // Before any password is read: no core dump, no ptrace by the same user.
  dbcheck::util::keep_memory_private();
  // Before any thread starts: one malloc arena, 256 KiB thread stacks (util/thread_memory.hpp).
  dbcheck::util::small_thread_footprint();
  const int rc = dbcheck::agent::run(argc, argv);
  // As in dbcheck: a check step abandoned at its deadline may still run on a detached thread;
  // leave without tearing libraries down under it.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(rc);
}
