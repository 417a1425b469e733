#include "name_resolver.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <memory>
#include <mutex>
#include <thread>

namespace dbcheck::probe {
namespace {

// One lookup handed to glibc. It must stay where it is until glibc is done with it.
struct Lookup {
  std::string name;
  addrinfo hints{};
  gaicb cb{};
};

// Lookups that outlived their check: glibc still writes into them, so they are freed only once
// it reports them finished. Never destroyed: a lookup may finish while the process exits.
std::mutex& orphans_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::vector<std::unique_ptr<Lookup>>& orphans() {
  static auto* v = new std::vector<std::unique_ptr<Lookup>>;
  return *v;
}

void release(Lookup& l) {
  if (l.cb.ar_result != nullptr) {
    freeaddrinfo(l.cb.ar_result);
    l.cb.ar_result = nullptr;
  }
}

void reap_orphans() {
  const std::lock_guard lock{orphans_mutex()};
  std::erase_if(orphans(), [](const std::unique_ptr<Lookup>& l) {
    if (gai_error(&l->cb) == EAI_INPROGRESS) {
      return false;
    }
    release(*l);
    return true;
  });
}

// True while an earlier check's lookup of `name` has not been answered.
bool still_running(const std::string& name) {
  const std::lock_guard lock{orphans_mutex()};
  return std::any_of(orphans().begin(), orphans().end(), [&](const std::unique_ptr<Lookup>& l) {
    return l->name == name && gai_error(&l->cb) == EAI_INPROGRESS;
  });
}

std::vector<std::string> addresses_of(const addrinfo* list) {
  std::vector<std::string> out;
  for (const addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    std::array<char, INET6_ADDRSTRLEN> buf{};
    const void* src = nullptr;
    if (ai->ai_family == AF_INET) {
      src = &reinterpret_cast<const sockaddr_in*>(ai->ai_addr)->sin_addr;
    } else if (ai->ai_family == AF_INET6) {
      src = &reinterpret_cast<const sockaddr_in6*>(ai->ai_addr)->sin6_addr;
    } else {
      continue;
    }
    if (inet_ntop(ai->ai_family, src, buf.data(), buf.size()) == nullptr) {
      continue;
    }
    std::string a{buf.data()};
    if (std::find(out.begin(), out.end(), a) == out.end()) {
      out.push_back(std::move(a));
    }
  }
  return out;
}

std::string lookup_error(int rc) {
  if (rc == EAI_NONAME) {
    return "no such name";
  }
  if (rc == EAI_NODATA) {
    return "the name has no address";
  }
  if (rc == EAI_AGAIN) {
    return "the name server failed for now (EAI_AGAIN)";
  }
  return gai_strerror(rc);
}

// How often a running lookup is looked at: /etc/hosts answers in microseconds, DNS in
// milliseconds; a check's deadline is hundreds of milliseconds.
constexpr auto k_poll_every = std::chrono::milliseconds{1};

} // namespace

std::vector<core::NameAnswer> resolve_names(const std::vector<std::string>& names,
                                            const Deadline& deadline) {
  reap_orphans();
  std::vector<core::NameAnswer> answers;
  std::vector<std::unique_ptr<Lookup>> lookups(names.size()); // by index; null: not started
  std::vector<gaicb*> list;
  for (std::size_t i = 0; i < names.size(); ++i) {
    answers.push_back({names[i], std::vector<std::string>{}});
    if (deadline.expired()) {
      answers[i].addresses = tl::make_unexpected(std::string{"no time left to resolve it"});
      continue;
    }
    if (still_running(names[i])) {
      // glibc runs few lookup threads: one unanswered lookup per name, not one per check.
      answers[i].addresses = tl::make_unexpected(
          std::string{"an earlier lookup of it is still unanswered (a slow or silent name "
                      "server)"});
      continue;
    }
    auto l = std::make_unique<Lookup>();
    l->name = names[i];
    l->hints.ai_family = AF_UNSPEC;
    l->hints.ai_socktype = SOCK_STREAM;
    l->cb.ar_name = l->name.c_str();
    l->cb.ar_request = &l->hints;
    list.push_back(&l->cb);
    lookups[i] = std::move(l);
  }
  if (list.empty()) {
    return answers;
  }
  // A non-zero answer does not mean nothing was queued: glibc queues each request before it
  // fails on the next, so every lookup is judged by its own state below. One it did not queue
  // keeps the zeroed state it was given (finished, no result: "no address").
  getaddrinfo_a(GAI_NOWAIT, list.data(), static_cast<int>(list.size()), nullptr);
  // Waits by polling, not with gai_suspend: glibc 2.36's lookup threads set a request's result
  // before taking the lock that gai_suspend removes its waiters under, so a gai_suspend that
  // returns (a timeout, another completion) can leave its on-stack waiter in a request that is
  // just finishing, which glibc then writes through (__gai_notify: a crash, seen in about 5% of
  // checks resolving three names on a loaded machine). Polling keeps no waiter anywhere.
  for (;;) {
    const bool running = std::any_of(lookups.begin(), lookups.end(), [](const auto& l) {
      return l && gai_error(&l->cb) == EAI_INPROGRESS;
    });
    if (!running || deadline.expired()) {
      break;
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(k_poll_every, deadline.remaining()));
  }
  for (std::size_t i = 0; i < lookups.size(); ++i) {
    auto& l = lookups[i];
    if (!l) {
      continue;
    }
    const int rc = gai_error(&l->cb);
    if (rc == EAI_INPROGRESS) {
      answers[i].addresses = tl::make_unexpected(std::string{"no answer before the deadline"});
      // Freed only once glibc is done with it: cancelled, or finished meanwhile.
      if (gai_cancel(&l->cb) == EAI_CANCELED || gai_error(&l->cb) != EAI_INPROGRESS) {
        release(*l);
      } else {
        const std::lock_guard lock{orphans_mutex()};
        orphans().push_back(std::move(l));
      }
      continue;
    }
    if (rc == 0) {
      answers[i].addresses = addresses_of(l->cb.ar_result);
    } else {
      answers[i].addresses = tl::make_unexpected(lookup_error(rc));
    }
    release(*l);
  }
  return answers;
}

} // namespace dbcheck::probe
