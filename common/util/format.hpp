#pragma once
// Text formatting for the whole project: fmt's API, with fmt's engine compiled in one file.
// fmt is used header-only: its shared library would bring libstdc++.so back into the statically
// linked binaries (external-check/). Every call goes through one out-of-line vformat so that the
// engine is not compiled again in each file that formats, with fmt's public API only: a list of
// fmt's internals to instantiate would break with each fmt release.

#include <fmt/format.h>

#include <string>

namespace dbcheck::util {

// --- Interface ---

// `f` filled with the type-erased `args`, as fmt::vformat; the one place fmt's engine runs.
std::string vformat(fmt::string_view f, fmt::format_args args);

// `f` filled with `args`, as fmt::format; `f` is checked against the arguments at compile time.
template <class... T>
std::string format(fmt::format_string<T...> f, T&&... args) {
  return util::vformat(f, fmt::make_format_args(args...));
}

} // namespace dbcheck::util
