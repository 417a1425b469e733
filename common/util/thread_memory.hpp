#pragma once
// What each thread of a long-running process costs in memory: glibc's per-thread malloc arenas
// and the default thread stack. Header-only: only dbcheck-agent calls it.

#include <malloc.h>
#include <pthread.h>

#include <cstddef>

namespace dbcheck::util {

// --- Interface ---

// The default stack of the threads a process creates once small_thread_footprint has run:
// 8 MiB (RLIMIT_STACK) otherwise. 256 KiB is twice musl's default, which libpq, libcurl,
// OpenSSL, GnuTLS and glibc's resolver all run on; the agent's own frames are small.
inline constexpr std::size_t k_thread_stack_bytes = 256 * 1024;

// Call first thing in main, before any thread starts (a library's constructor starts none):
// - one malloc arena for every thread (M_ARENA_MAX 1). glibc gives each new thread an arena
//   of its own until there are 8 per core, each reserving 64 MiB and keeping the pages its
//   last allocations touched; a prober that spawns short-lived threads every round would
//   otherwise end up holding all of them. The agent allocates little, and rarely at once;
// - fixed mmap and trim thresholds (128 KiB, glibc's starting values): glibc otherwise raises
//   both after a large block is freed (up to 32/64 MiB), and the heap then keeps that much free
//   memory from then on;
// - threads created with the default attributes (std::thread, libmicrohttpd's, libcurl's
//   resolver's) get k_thread_stack_bytes of stack instead of 8 MiB. Under AddressSanitizer or
//   ThreadSanitizer, whose instrumentation grows the frames, the stacks stay at the default.
// Best effort: a setting glibc refuses leaves its default in place.
void small_thread_footprint();

// --- Implementation ---

inline void small_thread_footprint() {
  ::mallopt(M_ARENA_MAX, 1);
  ::mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  ::mallopt(M_TRIM_THRESHOLD, 128 * 1024);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  pthread_attr_t attr;
  if (::pthread_getattr_default_np(&attr) == 0) {
    if (::pthread_attr_setstacksize(&attr, k_thread_stack_bytes) == 0) {
      ::pthread_setattr_default_np(&attr);
    }
    ::pthread_attr_destroy(&attr);
  }
#endif
}

} // namespace dbcheck::util
