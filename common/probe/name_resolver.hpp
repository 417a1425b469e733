#pragma once
// Host names resolved within a deadline. The system's resolver (nsswitch: /etc/hosts, then DNS,
// as HAProxy, libpq and Patroni resolve) run through glibc's getaddrinfo_a, so a slow or silent
// DNS server costs a check its remaining time, never more.

#include "deadline.hpp"

#include <core/endpoint_names.hpp>

#include <string>
#include <vector>

namespace dbcheck::probe {

// --- Interface ---

// Resolves every name at once and returns one answer per name, in order, by `deadline`: a name
// not resolved by then answers "no answer before the deadline". A lookup still running then
// is left to finish on its own and reaped by a later call (glibc cannot cancel a running one);
// until it finishes, that name answers at once that it is still unanswered, so a silent name
// server holds one of glibc's few lookup threads per name, not one per check.
std::vector<core::NameAnswer> resolve_names(const std::vector<std::string>& names,
                                            const Deadline& deadline);

} // namespace dbcheck::probe
