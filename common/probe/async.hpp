#pragma once
// Running a check's steps side by side without ever waiting past the deadline for one.

#include <chrono>
#include <future>
#include <thread>

namespace dbcheck::probe {

// How long after the deadline a caller keeps waiting for a step that honours the deadline
// itself (poll() granularity, thread wake-up); a step later than that is abandoned.
inline constexpr auto k_grace = std::chrono::milliseconds{20};

// --- Interface ---

// Runs `fn` on its own detached thread and returns its future. A caller that stops waiting at
// its deadline is never held up by a step that overran (unlike std::async, whose future blocks
// in its destructor). `fn` must own everything it uses (capture by value).
template <class Fn>
auto spawn(Fn fn) -> std::future<decltype(fn())> {
  std::packaged_task<decltype(fn())()> task(std::move(fn));
  auto fut = task.get_future();
  std::thread(std::move(task)).detach();
  return fut;
}

} // namespace dbcheck::probe
