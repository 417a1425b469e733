// Catch2 2 only: its runner's main (Catch2 3 brings its own, tests/unit/CMakeLists.txt).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
