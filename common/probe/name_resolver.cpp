#include "name_resolver.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <ctime>
#include <memory>
#include <mutex>

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

} // namespace

std::vector<core::NameAnswer> resolve_names(const std::vector<std::string>& names,
                                            const Deadline& deadline) {
  reap_orphans();
  std::vector<core::NameAnswer> answers;
  if (names.empty()) {
    return answers;
  }
  std::vector<std::unique_ptr<Lookup>> lookups;
  std::vector<gaicb*> list;
  for (const auto& n : names) {
    auto l = std::make_unique<Lookup>();
    l->name = n;
    l->hints.ai_family = AF_UNSPEC;
    l->hints.ai_socktype = SOCK_STREAM;
    l->cb.ar_name = l->name.c_str();
    l->cb.ar_request = &l->hints;
    list.push_back(&l->cb);
    lookups.push_back(std::move(l));
  }
  if (const int rc = getaddrinfo_a(GAI_NOWAIT, list.data(), static_cast<int>(list.size()), nullptr);
      rc != 0) {
    // Nothing was queued (EAI_AGAIN: no resources, EAI_MEMORY): every name is unanswered.
    for (const auto& l : lookups) {
      answers.push_back({l->name, tl::make_unexpected(fmt::format(
                                      "the resolver could not start: {}", gai_strerror(rc)))});
    }
    return answers;
  }
  for (;;) {
    std::vector<const gaicb*> running;
    for (const auto& l : lookups) {
      if (gai_error(&l->cb) == EAI_INPROGRESS) {
        running.push_back(&l->cb);
      }
    }
    if (running.empty() || deadline.expired()) {
      break;
    }
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.remaining()).count();
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(ns / 1000000000);
    ts.tv_nsec = static_cast<long>(ns % 1000000000);
    // Returns on a completion, the timeout or a signal; the loop re-reads every state.
    gai_suspend(running.data(), static_cast<int>(running.size()), &ts);
  }
  for (auto& l : lookups) {
    const int rc = gai_error(&l->cb);
    if (rc == EAI_INPROGRESS) {
      answers.push_back({l->name, tl::make_unexpected(std::string{"no answer before the deadline"})});
      if (gai_cancel(&l->cb) != EAI_CANCELED) {
        const std::lock_guard lock{orphans_mutex()};
        orphans().push_back(std::move(l));
      }
      continue;
    }
    if (rc == 0) {
      answers.push_back({l->name, addresses_of(l->cb.ar_result)});
    } else {
      answers.push_back({l->name, tl::make_unexpected(lookup_error(rc))});
    }
    release(*l);
  }
  return answers;
}

} // namespace dbcheck::probe
