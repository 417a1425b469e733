#pragma once
// The fuzz targets' one assertion: a broken invariant aborts, which libFuzzer reports as a
// crash with the input that caused it (assert() would vanish under NDEBUG).

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace dbcheck::fuzz {

// Aborts naming `invariant` unless `holds`.
inline void require(bool holds, const char* invariant) {
  if (!holds) {
    std::fprintf(stderr, "fuzz invariant broken: %s\n", invariant);
    std::abort();
  }
}

// The fuzzer's bytes as text (binary-safe).
inline std::string_view as_text(const unsigned char* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

} // namespace dbcheck::fuzz
