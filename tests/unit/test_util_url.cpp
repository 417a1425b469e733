#include "dbcheck_catch.hpp"

#include <util/url.hpp>

#include <string>

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

TEST_CASE("plain http targets: IP literals over http:// only", "[util][url]") {
  using dbcheck::util::plain_http_target;
  const auto v4 = plain_http_target("HTTP://10.0.0.1:8008/cluster?x=1#frag");
  REQUIRE(v4);
  CHECK(v4->address == "10.0.0.1");
  CHECK(v4->port == 8008);
  CHECK(v4->host_header == "10.0.0.1:8008");
  CHECK(v4->target == "/cluster?x=1");
  const auto v6 = plain_http_target("http://[::1]:8008");
  REQUIRE(v6);
  CHECK(v6->address == "::1");
  CHECK(v6->host_header == "[::1]:8008");
  CHECK(v6->target == "/");
  const auto bare = plain_http_target("http://127.0.0.1?q");
  REQUIRE(bare);
  CHECK(bare->port == 80);
  CHECK(bare->target == "/?q");
  // What needs the full client, or is no URL at all.
  for (const char* other :
       {"https://10.0.0.1:8008/", "http://patroni1:8008/", "http://u:p@10.0.0.1:8008/",
        "http://10.1:8008/", "http://0x0a000001/", "http://[fe80::1%eth0]:8008/",
        "http://[::1:8008/", "http://[::1]x/", "http://10.0.0.1:0/", "http://10.0.0.1:65536/",
        "http://10.0.0.1:80a/", "http://10.0.0.1:8008/a b", "http://10.0.0.1:8008/a\r\nX: y",
        "http://", "10.0.0.1:8008", ""}) {
    CAPTURE(other);
    CHECK_FALSE(plain_http_target(other));
  }
  // A NUL would end the address early for inet_pton: http://10.0.0.1 with a Host cut short.
  CHECK_FALSE(plain_http_target(std::string("http://10.0.0.1\0evil:8008/x", 27)));
}
