#include <util/url.hpp>

#include <catch2/catch.hpp>

using dbcheck::util::redact_url;
using dbcheck::util::url_origin;

TEST_CASE("credentials never show", "[util][url]") {
  CHECK(redact_url("http://u:p@10.0.0.1:8008/x") == "http://***@10.0.0.1:8008/x");
  CHECK(redact_url("http://10.0.0.1:8008") == "http://10.0.0.1:8008");
}

TEST_CASE("origins say which server a URL reaches", "[util][url]") {
  CHECK(url_origin("http://10.0.0.1:8008/patroni") == "http://10.0.0.1:8008");
  CHECK(url_origin("HTTP://Pg1.Example:8008") == "http://pg1.example:8008");
  CHECK(url_origin("https://u:p@10.0.0.1/x?y") == "https://10.0.0.1:443");
  CHECK(url_origin("http://[::1]:8008/patroni") == "http://[::1]:8008");
  CHECK(url_origin("http://[::1]/patroni") == "http://[::1]:80");
  CHECK_FALSE(url_origin("ftp://10.0.0.1/"));
  CHECK_FALSE(url_origin("http://"));
  CHECK_FALSE(url_origin("http://10.0.0.1:/x"));
  CHECK_FALSE(url_origin(""));
}
