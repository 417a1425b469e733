# Fails the build when the dbcheck executable (BINARY) links libpq or libcurl directly: they
# belong in its client modules (external-check/client_modules.cpp), loaded only when needed.
execute_process(COMMAND ${READELF} -d ${BINARY} OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${READELF} -d ${BINARY} failed")
endif()
if(dynamic MATCHES "NEEDED[^\n]*(libpq|libcurl)")
  message(FATAL_ERROR "${BINARY} links ${CMAKE_MATCH_1} directly: it should come from a module")
endif()
