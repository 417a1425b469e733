# Installation layout and the Debian package (cpack -G DEB): both binaries, man pages, the
# agent's systemd unit, the docs and examples under share/doc/dbcheck. scripts/build
# configures with CMAKE_INSTALL_PREFIX=/usr, the Debian layout the unit's ExecStart names.
include(GNUInstallDirs)

# The unit as shipped in agent/ names /usr/sbin (the package); the installed one names where the agent
# is actually installed.
file(READ ${PROJECT_SOURCE_DIR}/agent/dbcheck-agent.service unit_text)
string(REPLACE "/usr/sbin/dbcheck-agent" "${CMAKE_INSTALL_FULL_SBINDIR}/dbcheck-agent"
       unit_text "${unit_text}")
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/packaging/dbcheck-agent.service
     CONTENT "${unit_text}" @ONLY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/agent/dbcheck-agent.service)
install(FILES ${PROJECT_BINARY_DIR}/packaging/dbcheck-agent.service
        DESTINATION ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
# HAProxy's cold start from dbcheck's verdicts: a drop-in the operator copies into
# /etc/systemd/system/haproxy.service.d/ to turn it on (the file says how, and when it acts).
# Not under /usr/lib/systemd: there it would run before every HAProxy start of every host
# that installs the package. Not under doc/: a system may exclude that directory.
install(FILES packaging/haproxy-dbcheck-state.conf DESTINATION ${CMAKE_INSTALL_DATADIR}/dbcheck)

# Man pages, gzipped as Debian policy asks (-n: no timestamp, reproducible).
set(man_pages docs/man/dbcheck.1 docs/man/dbcheck-agent.8 docs/man/dbcheck.toml.5)
set(man_outputs "")
foreach(page IN LISTS man_pages)
  get_filename_component(name ${page} NAME)
  string(REGEX MATCH "[0-9]$" section ${name})
  add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/man/${name}.gz
                     COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
                     COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/${page} > ${PROJECT_BINARY_DIR}/man/${name}.gz
                     DEPENDS ${PROJECT_SOURCE_DIR}/${page} VERBATIM)
  list(APPEND man_outputs ${PROJECT_BINARY_DIR}/man/${name}.gz)
  install(FILES ${PROJECT_BINARY_DIR}/man/${name}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endforeach()
add_custom_target(man_pages ALL DEPENDS ${man_outputs})

install(FILES README.md docs/architecture.md docs/agent.md docs/explain.md docs/lag.md
              docs/failover.md docs/results.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/sql docs/redis DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY haproxy-examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
# Prometheus alert rules (with their promtool unit tests) and a Grafana dashboard.
install(FILES monitoring/dbcheck-alerts.yml monitoring/dbcheck-alerts.test.yml
              monitoring/dbcheck-dashboard.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/dbcheck/monitoring)

# What Debian policy asks of every binary package, and what lintian checks: the copyright file,
# a changelog (a native package: changelog.gz), and our lintian overrides, each with its reason.
set(DBCHECK_PACKAGE_MAINTAINER
    "dbcheck maintainers <maintainers@users.noreply.a-seed-b0d3dd28.example>"
    CACHE STRING "Maintainer field of the .deb, and the changelog's signature")
cmake_host_system_information(RESULT DBCHECK_DEBIAN_RELEASE QUERY DISTRIB_VERSION_ID)
cmake_host_system_information(RESULT DBCHECK_DEBIAN_CODENAME QUERY DISTRIB_VERSION_CODENAME)
if(NOT DBCHECK_DEBIAN_RELEASE MATCHES "^[0-9]+$" OR DBCHECK_DEBIAN_CODENAME STREQUAL "")
  message(FATAL_ERROR "the .deb is built on Debian: /etc/os-release has VERSION_ID "
                      "'${DBCHECK_DEBIAN_RELEASE}', VERSION_CODENAME '${DBCHECK_DEBIAN_CODENAME}'")
endif()
set(DBCHECK_DEB_VERSION "${PROJECT_VERSION}+deb${DBCHECK_DEBIAN_RELEASE}")
configure_file(${PROJECT_SOURCE_DIR}/packaging/changelog.in ${PROJECT_BINARY_DIR}/packaging/changelog @ONLY)
add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/packaging/changelog.gz
                   COMMAND gzip -9nc ${PROJECT_BINARY_DIR}/packaging/changelog
                           > ${PROJECT_BINARY_DIR}/packaging/changelog.gz
                   DEPENDS ${PROJECT_BINARY_DIR}/packaging/changelog VERBATIM)
add_custom_target(deb_changelog ALL DEPENDS ${PROJECT_BINARY_DIR}/packaging/changelog.gz)
install(FILES ${PROJECT_BINARY_DIR}/packaging/changelog.gz packaging/copyright
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The overrides every release's lintian needs, then those of this release's only (a tag a
# release's lintian no longer knows is an error there).
set(lintian_parts ${PROJECT_SOURCE_DIR}/packaging/lintian-overrides)
if(EXISTS ${PROJECT_SOURCE_DIR}/packaging/lintian-overrides-deb${DBCHECK_DEBIAN_RELEASE})
  list(APPEND lintian_parts ${PROJECT_SOURCE_DIR}/packaging/lintian-overrides-deb${DBCHECK_DEBIAN_RELEASE})
endif()
set(lintian_overrides "")
foreach(part IN LISTS lintian_parts)
  file(READ ${part} text)
  string(APPEND lintian_overrides "${text}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${part})
endforeach()
file(WRITE ${PROJECT_BINARY_DIR}/packaging/lintian-overrides "${lintian_overrides}")
install(FILES ${PROJECT_BINARY_DIR}/packaging/lintian-overrides
        DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME dbcheck)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dbcheck)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# A package per release: its Depends come from the libraries it was built against
# (dpkg-shlibdeps), so the release goes into the version, "0.1.0+deb12" < "0.1.0+deb13", and
# both can live in one apt repository; a dist-upgrade moves from the one to the other.
set(CPACK_DEBIAN_PACKAGE_VERSION "${DBCHECK_DEB_VERSION}")
set(CPACK_PACKAGE_CONTACT "${DBCHECK_PACKAGE_MAINTAINER}")
# Debian policy: a synopsis under 80 characters, description lines of at most 80.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "HAProxy health checks for PostgreSQL/Patroni and Redis/Sentinel")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "dbcheck is an HAProxy external check, and dbcheck-agent an agent-check
sidecar, for PostgreSQL under Patroni and Redis/Valkey under Sentinel.
A writer passes only when the cluster manager (Patroni, a Sentinel
majority) and the node itself agree that it is the primary; a reader
passes when its replication lag in seconds is within bounds.")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)  # debug info stays in the build tree
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "haproxy")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/postinst ${PROJECT_SOURCE_DIR}/packaging/prerm
    ${PROJECT_SOURCE_DIR}/packaging/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
