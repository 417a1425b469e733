#pragma once
// A Redis reply (RESP2) as plain data, so replies are parsed and judged without hiredis.

#include <string>
#include <vector>

namespace dbcheck::core {

// A RESP2 reply tree: one of string, status, error, integer, nil or array.
struct RespValue {
  enum class Type { string, status, error, integer, nil, array };
  Type type = Type::nil;
  std::string str;                 // string, status and error replies
  long long integer = 0;           // integer replies
  std::vector<RespValue> elements; // array replies

  // Constructors for tests and the probe.
  static RespValue string(std::string s) { return {Type::string, std::move(s), 0, {}}; }
  static RespValue status(std::string s) { return {Type::status, std::move(s), 0, {}}; }
  static RespValue error(std::string s) { return {Type::error, std::move(s), 0, {}}; }
  static RespValue number(long long n) { return {Type::integer, {}, n, {}}; }
  static RespValue nil() { return {}; }
  static RespValue array(std::vector<RespValue> e) { return {Type::array, {}, 0, std::move(e)}; }
};

} // namespace dbcheck::core
