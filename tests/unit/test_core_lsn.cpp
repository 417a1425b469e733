#include "dbcheck_catch.hpp"

#include <core/lsn.hpp>

using namespace dbcheck::core;

TEST_CASE("parse_lsn reads PostgreSQL's HI/LO form", "[core][lsn]") {
  CHECK(parse_lsn("0/0").value() == 0);
  CHECK(parse_lsn("0/3000060").value() == 0x3000060);
  CHECK(parse_lsn("16/B374D848").value() == ((0x16ULL << 32) | 0xB374D848ULL));
  CHECK(parse_lsn("FFFFFFFF/FFFFFFFF").value() == ~0ULL);
  CHECK(format_lsn(*parse_lsn("16/B374D848")) == "16/B374D848");
}

TEST_CASE("parse_lsn rejects anything else", "[core][lsn]") {
  const char* bad = GENERATE("", "/", "0/", "/0", "16B374D848", "G/0", "0/1/2", "100000000/0",
                             "0/100000000", " 0/1");
  CAPTURE(bad);
  CHECK_FALSE(parse_lsn(bad));
}
