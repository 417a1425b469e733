# Fails the build when an executable (BINARY: dbcheck, dbcheck-agent) loads at start what it
# should not: libpq, libcurl, libevent and libssl come from its client modules, loaded only when needed
# (common/probe/client_loader.cpp); libstdc++, fmt and toml++ are linked in (external-check/CMakeLists.txt, common/CMakeLists.txt).
execute_process(COMMAND ${READELF} -d ${BINARY} OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${READELF} -d ${BINARY} failed")
endif()
if(dynamic MATCHES "NEEDED[^\n]*(libpq|libcurl|libevent|libssl|libcrypto|libstdc\\+\\+|libfmt|libtomlplusplus)")
  message(FATAL_ERROR "${BINARY} needs ${CMAKE_MATCH_1} at start: see ${CMAKE_CURRENT_LIST_FILE}")
endif()
