#include "cli.hpp"

#include <util/process_guard.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
  // Before any password is read: no core dump, no ptrace by the same user.
  dbcheck::util::keep_memory_private();
  const int rc = dbcheck::extcheck::run(argc, argv);
  // Leave without running atexit handlers and static destructors: a check step abandoned at
  // its deadline may still be running on a detached thread (inside libpq or OpenSSL), and
  // tearing those libraries down under it could crash or hang the exit.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(rc);
}
