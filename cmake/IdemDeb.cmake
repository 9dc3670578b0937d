# The Debian packages, made by CPack from an installed build (scripts/package.sh: `cpack -G DEB`
# in a release build; docs/operations.md):
#   idem         install component "idem": the program, its man pages and bash completion, the
#                systemd units idem-serve@.service and idem-relay@.service, an example config
#                for each, example Prometheus alert rules; depends on what dpkg-shlibdeps finds
#                in the program, and on adduser for its postinst, which creates the system user
#                idem; its maintainer scripts stop, restart and purge as Debian Policy asks.
#   libidem-dev  install component "dev": headers, libraries, CMake package, pkg-config files.
# Both carry the one version of the top-level CMakeLists.txt. The example programs (component
# "examples") are in neither.
if(IDEM_BUILD_CLI)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/systemd/idem-serve@.service
    ${PROJECT_SOURCE_DIR}/packaging/systemd/idem-relay@.service
    DESTINATION lib/systemd/system COMPONENT idem)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/examples/serve.toml
    ${PROJECT_SOURCE_DIR}/packaging/examples/relay.env
    ${PROJECT_SOURCE_DIR}/packaging/examples/idem-alerts.yml
    DESTINATION ${CMAKE_INSTALL_DATADIR}/idem/examples COMPONENT idem)
  install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR}
    RENAME copyright COMPONENT idem)
  # The PostgreSQL store's tables and the SQL functions of schema idem (docs/sql.md), for teams
  # that install with psql: what an idem program opening the store applies, written at build
  # time from the same migrations (share/idem).
  if(IDEM_SQL_INSTALL_FILE)
    install(FILES ${IDEM_SQL_INSTALL_FILE} DESTINATION ${CMAKE_INSTALL_DATADIR}/idem
      COMPONENT idem)
  endif()
  set(CPACK_COMPONENTS_ALL idem dev)
else()
  set(CPACK_COMPONENTS_ALL dev)
endif()

# Each package's /usr/share/doc/PACKAGE holds its copyright and, compressed as Debian wants it
# (gzip -9n: the same bytes each build), the changelog (CHANGELOG.md).
find_program(IDEM_GZIP gzip REQUIRED)
add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/changelog.gz
  COMMAND ${IDEM_GZIP} -9nc ${PROJECT_SOURCE_DIR}/CHANGELOG.md > ${PROJECT_BINARY_DIR}/changelog.gz
  DEPENDS ${PROJECT_SOURCE_DIR}/CHANGELOG.md VERBATIM)
add_custom_target(idem_deb_changelog ALL DEPENDS ${PROJECT_BINARY_DIR}/changelog.gz)
if(IDEM_BUILD_CLI)
  install(FILES ${PROJECT_BINARY_DIR}/changelog.gz DESTINATION ${CMAKE_INSTALL_DOCDIR}
    COMPONENT idem)
endif()
install(FILES ${PROJECT_BINARY_DIR}/changelog.gz
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/libidem-dev COMPONENT dev)

# The documents an operator reads beside the man pages, in /usr/share/doc/idem, compressed as
# Debian wants files there (gzip -9n); the man pages and error messages name them there.
set(idem_operator_docs README.md docs/operations.md docs/gateway.md docs/outbox.md docs/keys.md
  docs/sql.md docs/sqlite-store.md docs/postgres-store.md docs/distributed-store.md
  docs/retries.md docs/idem-call.md docs/idem-check.md)
set(idem_operator_docs_gz "")
foreach(doc IN LISTS idem_operator_docs)
  get_filename_component(name ${doc} NAME)
  add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/doc/${name}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/doc
    COMMAND ${IDEM_GZIP} -9nc ${PROJECT_SOURCE_DIR}/${doc} > ${PROJECT_BINARY_DIR}/doc/${name}.gz
    DEPENDS ${PROJECT_SOURCE_DIR}/${doc} VERBATIM)
  list(APPEND idem_operator_docs_gz ${PROJECT_BINARY_DIR}/doc/${name}.gz)
endforeach()
add_custom_target(idem_deb_docs ALL DEPENDS ${idem_operator_docs_gz})
if(IDEM_BUILD_CLI)
  install(FILES ${idem_operator_docs_gz} DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT idem)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/libidem-dev
  RENAME copyright COMPONENT dev)

# lintian refuses a mail host that is no domain (idem@localhost): .invalid is reserved for names
# that resolve nowhere (RFC 2606); set the real one when publishing packages.
set(IDEM_DEB_MAINTAINER "idem maintainers <maintainers@idem.invalid>" CACHE STRING
  "Maintainer field of the Debian packages")
if(IDEM_DEB_MAINTAINER STREQUAL "idem maintainers <idem@localhost>")  # a cache from before
  set(IDEM_DEB_MAINTAINER "idem maintainers <maintainers@idem.invalid>" CACHE STRING
    "Maintainer field of the Debian packages" FORCE)
endif()
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME idem)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# The synopsis of both packages: lintian refuses one that starts with the package's name.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "make retries safe: idempotency keys, gateway, outbox relay")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES TRUE)
# The static libraries lose their debug info once staged (cmake/IdemDebStrip.cmake).
set(CPACK_IDEM_STRIP "${CMAKE_STRIP}")
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/cmake/IdemDebStrip.cmake)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${IDEM_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(CPACK_DEBIAN_IDEM_PACKAGE_NAME idem)
set(CPACK_DEBIAN_IDEM_PACKAGE_SECTION net)
set(CPACK_DEBIAN_IDEM_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_IDEM_PACKAGE_DEPENDS adduser)
# Maintainer scripts: postinst creates the user idem and restarts running instances on an
# upgrade; prerm stops them on removal; postrm purges /etc/idem, /var/lib/idem and the user.
set(CPACK_DEBIAN_IDEM_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
  ${PROJECT_SOURCE_DIR}/packaging/debian/prerm ${PROJECT_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_IDEM_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_COMPONENT_IDEM_DESCRIPTION
  "idem serve, an HTTP gateway giving any API Idempotency-Key semantics; idem
 relay, which publishes a transactional outbox; idem call, idem keys, idem
 outbox and idem sim; the systemd units idem-serve@.service and
 idem-relay@.service.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libidem-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# pkg-config: the installed CMake package finds some of its dependencies through it.
set(idem_dev_depends libabsl-dev libfmt-dev libssl-dev libsqlite3-dev libboost1.81-dev
  libboost-json1.81-dev pkg-config)
if(IDEM_WITH_POSTGRES)
  list(APPEND idem_dev_depends libpq-dev)
endif()
if(IDEM_WITH_NATS)
  list(APPEND idem_dev_depends libnats-dev)
endif()
list(JOIN idem_dev_depends ", " CPACK_DEBIAN_DEV_PACKAGE_DEPENDS)
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "libidem, the library behind idem: idempotency keys claimed in the same
 database transaction as the caller's business write (SQLite, PostgreSQL), a
 transactional outbox, an inbox and a retry toolkit. Headers, libraries, CMake
 package (find_package(idem)) and pkg-config files.")

include(CPack)
