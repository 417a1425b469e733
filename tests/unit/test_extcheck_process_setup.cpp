#include "dbcheck_catch.hpp"
#include "process_setup.hpp"

#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <thread>

using namespace dbcheck::extcheck;

TEST_CASE("blocked stop signals wait to be taken, one at a time, by name", "[extcheck][signals]") {
  sigset_t before;
  pthread_sigmask(SIG_SETMASK, nullptr, &before);
  block_stop_signals();
  CHECK_FALSE(take_stop_signal());

  ::kill(::getpid(), SIGTERM); // process-directed, as `kill PID` sends it
  CHECK(take_stop_signal() == std::optional<std::string>{"SIGTERM"});
  CHECK_FALSE(take_stop_signal());
  std::raise(SIGINT); // thread-directed, as from raise()
  CHECK(take_stop_signal() == std::optional<std::string>{"SIGINT"});
  CHECK_FALSE(take_stop_signal());

  // A thread started afterwards (the probes' threads) inherits the block: a signal cannot be
  // delivered there and kill the process half-way.
  bool blocked_there = false;
  std::thread([&] {
    sigset_t mask;
    pthread_sigmask(SIG_SETMASK, nullptr, &mask);
    blocked_there = sigismember(&mask, SIGINT) == 1 && sigismember(&mask, SIGTERM) == 1;
  }).join();
  CHECK(blocked_there);

  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}
