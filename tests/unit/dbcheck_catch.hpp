#pragma once
// Catch2 for the unit tests, whichever major version the system has: Debian 12 ships Catch2 2
// (one header, catch2/catch.hpp), Debian 13 Catch2 3 (a header per part, a library with main).
// The tests use the spellings below, the same on both.

#if __has_include(<catch2/catch_test_macros.hpp>)

#include <catch2/catch_approx.hpp>
#include <catch2/catch_message.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <string>

// Catch2 2 declares Approx in the global namespace; the tests spell it so.
using Catch::Approx;

namespace dbcheck_test {

// Matches a string that contains `part`. Catch2 3's Matchers::Contains is the range matcher.
inline Catch::Matchers::StringContainsMatcher Contains(const std::string& part) {
  return Catch::Matchers::ContainsSubstring(part);
}
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

} // namespace dbcheck_test

#else

#include <catch2/catch.hpp>

#include <string>

namespace dbcheck_test {

// Matches a string that contains `part` (only the string matcher, as on Catch2 3).
inline Catch::Matchers::StdString::ContainsMatcher Contains(const std::string& part) {
  return Catch::Matchers::Contains(part);
}
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

} // namespace dbcheck_test

#endif
