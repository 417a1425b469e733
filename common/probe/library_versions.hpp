#pragma once
// The versions of the client libraries dbcheck runs with, for --version and bug reports.

#include <string>

namespace dbcheck::probe {

// --- Interface ---

// "libpq 15.18, hiredis 0.14.1, libcurl 7.88.1": the libraries actually loaded (libpq, curl)
// or compiled in (hiredis has no runtime query).
std::string library_versions();

// "dbcheck 0.1.0 (libpq 15.18, ...)" for `program`'s --version: the version is the project's
// (CMakeLists.txt), the one place it is written.
std::string version_banner(const std::string& program);

} // namespace dbcheck::probe
