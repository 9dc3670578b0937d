# The installed package (IDEM_INSTALL): the public headers, the libraries marked PACKAGE in
# idem_library(), the CMake package (idemConfig.cmake, its version file and the exported
# targets idem::idem, idem::retry, ...), pkg-config files, the licence: install component "dev"
# (the Debian package libidem-dev). Programs install themselves with idem_install_program()
# (cmake/IdemHelpers.cmake); the Debian packages are made in cmake/IdemDeb.cmake.
include(CMakePackageConfigHelpers)

get_property(idem_package_libraries GLOBAL PROPERTY IDEM_PACKAGE_LIBRARIES)
set(idem_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/idem)

install(TARGETS ${idem_package_libraries} idem_idem EXPORT idemTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT dev
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(idem_header_excludes "")
if(NOT IDEM_WITH_POSTGRES)
  list(APPEND idem_header_excludes PATTERN postgres_store.h EXCLUDE)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/idem DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT dev FILES_MATCHING PATTERN "*.h" ${idem_header_excludes})
install(FILES ${PROJECT_BINARY_DIR}/generated/include/idem/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/idem COMPONENT dev)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT dev)

install(EXPORT idemTargets NAMESPACE idem:: DESTINATION ${idem_cmake_dir} COMPONENT dev)
get_property(IDEM_CONFIG_DEPENDENCIES GLOBAL PROPERTY IDEM_CONFIG_DEPENDENCIES)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/idemConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/idemConfig.cmake INSTALL_DESTINATION ${idem_cmake_dir})
# 0.x: a new minor version may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/idemConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/idemConfig.cmake
  ${PROJECT_BINARY_DIR}/package/idemConfigVersion.cmake DESTINATION ${idem_cmake_dir}
  COMPONENT dev)

# idem_pkgconfig(NAME DESCRIPTION LIBRARIES targets... REQUIRES modules... LIBS flags...): writes
# and installs NAME.pc, relocatable (paths relative to the .pc file). LIBRARIES in link order:
# each before what it needs.
function(idem_pkgconfig name description)
  cmake_parse_arguments(ARG "" "" "LIBRARIES;REQUIRES;LIBS" ${ARGN})
  set(IDEM_PC_NAME ${name})
  set(IDEM_PC_DESCRIPTION ${description})
  file(RELATIVE_PATH IDEM_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
  set(libs "")
  foreach(target IN LISTS ARG_LIBRARIES)
    list(APPEND libs -l$<TARGET_LINKER_FILE_BASE_NAME:${target}>)
  endforeach()
  if(IDEM_SANITIZE)
    list(APPEND ARG_LIBS ${IDEM_SANITIZER_FLAG})
  endif()
  list(JOIN ARG_REQUIRES " " IDEM_PC_REQUIRES)
  list(JOIN libs " " IDEM_PC_LIBS)
  list(JOIN ARG_LIBS " " extra)
  string(APPEND IDEM_PC_LIBS " ${extra}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/idem.pc.in ${PROJECT_BINARY_DIR}/package/${name}.pc.in
    @ONLY)
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/package/${name}.pc
    INPUT ${PROJECT_BINARY_DIR}/package/${name}.pc.in)
  install(FILES ${PROJECT_BINARY_DIR}/package/${name}.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
endfunction()

# idem.pc: everything (as idem::idem). Package libraries register in dependency order, so the
# reverse is a valid link order. The modules and flags are the pkg-config names of what
# cmake/IdemDependencies.cmake finds.
set(idem_link_order ${idem_package_libraries})
list(REVERSE idem_link_order)
get_property(idem_pc_modules GLOBAL PROPERTY IDEM_PC_REQUIRES)
set(idem_pc_requires absl_status absl_statusor fmt libcrypto sqlite3 ${idem_pc_modules})
if(IDEM_WITH_POSTGRES)
  list(APPEND idem_pc_requires libpq)
endif()
idem_pkgconfig(idem "libidem: idempotency keys, run-once guard, stores and retry toolkit"
  LIBRARIES ${idem_link_order}
  REQUIRES ${idem_pc_requires}
  LIBS -lboost_json -pthread)
# idem-retry.pc: the retry toolkit alone (as idem::retry).
idem_pkgconfig(idem-retry "libidem's retry toolkit: backoff, policy, budget, circuit breaker"
  LIBRARIES idem_retry idem_common
  REQUIRES absl_status absl_statusor fmt
  LIBS -pthread)

# The Debian packages: only for idem's own build, never inside a project that pulls idem in.
if(PROJECT_IS_TOP_LEVEL)
  include(IdemDeb)
endif()
