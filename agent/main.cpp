#include "agent_app.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
  const int rc = dbcheck::agent::run(argc, argv);
  // As in dbcheck: a check step abandoned at its deadline may still run on a detached thread;
  // leave without tearing libraries down under it.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(rc);
}
