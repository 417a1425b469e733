// Patroni takes a tag for set by Python's truth value of what is configured; so does dbcheck.
#include "dbcheck_catch.hpp"

#include <core/patroni_tags.hpp>

using dbcheck::core::truthy_tag;
using nlohmann::json;

TEST_CASE("a tag is set by Python's truth value, as Patroni reads it", "[core][patroni][tags]") {
  for (const char* set :
       {"true", "1", "-1", "0.5", R"("yes")", R"("false")", R"("0")", "[0]", R"({"a": 1})"}) {
    CAPTURE(set);
    CHECK(truthy_tag(json::parse(set)));
  }
  for (const char* unset : {"false", "0", "0.0", R"("")", "[]", "{}", "null"}) {
    CAPTURE(unset);
    CHECK_FALSE(truthy_tag(json::parse(unset)));
  }
}
