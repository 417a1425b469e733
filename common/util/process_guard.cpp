#include "process_guard.hpp"

#include <sys/prctl.h>
#include <sys/resource.h>

namespace dbcheck::util {

void keep_memory_private() {
  // Both are best effort: neither can fail for an unprivileged process on Linux, and a check
  // must still run if a sandbox forbids them.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  const rlimit none{0, 0};
  ::setrlimit(RLIMIT_CORE, &none);
}

} // namespace dbcheck::util
