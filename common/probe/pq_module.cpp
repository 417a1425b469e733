// dbcheck-pq.so: the entry point of the libpq module (client_modules.hpp); pg_session.cpp
// comes with it from the probe's library.
#include "client_modules.hpp"

namespace dbcheck::probe {
namespace {

const PgModule k_module{
    k_module_abi,
    &PgSession::connect,
    [](PgSession& s, const std::string& sql, const std::vector<std::string>& params,
       const Deadline& deadline) { return s.query(sql, params, deadline); },
    [](pg_conn* c) { PgSession::Closer{}(c); },
    &libpq_version,
};

} // namespace
} // namespace dbcheck::probe

extern "C" const dbcheck::probe::PgModule* dbcheck_pq_module() {
  return &dbcheck::probe::k_module;
}
