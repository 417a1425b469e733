#include "dbcheck_catch.hpp"

#include <util/decimal_text.hpp>

using namespace dbcheck::util;

TEST_CASE("a quantity splits into whole, fraction and unit, unchecked", "[util][decimal_text]") {
  const DecimalText a = split_decimal("1.5s");
  CHECK((a.whole == "1" && a.fraction == "5" && a.unit == "s" && a.has_point));
  const DecimalText b = split_decimal("512MiB");
  CHECK((b.whole == "512" && b.fraction.empty() && b.unit == "MiB" && !b.has_point));
  const DecimalText c = split_decimal("1.GiB"); // a point without digits after it
  CHECK((c.whole == "1" && c.fraction.empty() && c.unit == "GiB" && c.has_point));
  const DecimalText d = split_decimal("1.2.3ms"); // the parsers refuse the second point
  CHECK((d.whole == "1" && d.fraction == "2.3" && d.unit == "ms"));
  const DecimalText e = split_decimal("ms");
  CHECK((e.whole.empty() && e.fraction.empty() && e.unit == "ms" && !e.has_point));
  CHECK(split_decimal("").unit.empty());
}
