# Every dependency is a Debian 12 package; scripts/install-deps.sh installs them by name.
#
# idem_package_dependency(ARGS...) finds a dependency of the installed libraries (the PACKAGE
# ones of idem_library) with find_package(ARGS... REQUIRED), and records the same call, so that
# the installed idemConfig.cmake finds it with find_dependency(ARGS...) by the same rule.
# idem_package_pkg_module(PREFIX MODULE) does the same for a dependency found through
# pkg-config (imported target PkgConfig::PREFIX), e.g. one whose CMake config is broken.
macro(idem_package_dependency)
  find_package(${ARGN} REQUIRED)
  string(JOIN " " idem_dependency_args ${ARGN})
  set_property(GLOBAL APPEND_STRING PROPERTY IDEM_CONFIG_DEPENDENCIES
    "find_dependency(${idem_dependency_args})\n")
endmacro()

macro(idem_package_pkg_module prefix module)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(${prefix} REQUIRED IMPORTED_TARGET GLOBAL ${module})
  set_property(GLOBAL APPEND_STRING PROPERTY IDEM_CONFIG_DEPENDENCIES
    "find_dependency(PkgConfig)\npkg_check_modules(${prefix} REQUIRED IMPORTED_TARGET ${module})\n")
  set_property(GLOBAL APPEND PROPERTY IDEM_PC_REQUIRES ${module})
endmacro()

# What the installed libraries need.
idem_package_dependency(Threads)
idem_package_dependency(absl CONFIG)
idem_package_dependency(fmt CONFIG)
idem_package_dependency(OpenSSL)
idem_package_dependency(SQLite3)
if(IDEM_WITH_POSTGRES)
  idem_package_dependency(PostgreSQL)
endif()
# libnats (Debian's libnats-dev): its CMake package config names a static library Debian does not
# ship, so it is found through pkg-config (imported target PkgConfig::libnats).
if(IDEM_WITH_NATS)
  idem_package_pkg_module(libnats libnats)
endif()
idem_package_dependency(Boost 1.81 CONFIG COMPONENTS json)

# What only the program, the examples, the tests and the benchmarks need (none of it when idem
# is a subproject that builds its libraries only).
if(IDEM_BUILD_CLI OR IDEM_BUILD_EXAMPLES OR IDEM_BUILD_TESTS OR IDEM_BUILD_BENCH)
  find_package(Boost 1.81 CONFIG REQUIRED COMPONENTS json url)
  find_package(CLI11 CONFIG REQUIRED)
  find_package(spdlog CONFIG REQUIRED)
endif()
# The idem program tells systemd when it is ready (sd_notify; Debian's libsystemd-dev).
if(IDEM_BUILD_CLI)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(libsystemd REQUIRED IMPORTED_TARGET libsystemd)
endif()
# The program's allocator (IDEM_MALLOC): the effective choice is IDEM_PROGRAM_MALLOC.
set(IDEM_PROGRAM_MALLOC ${IDEM_MALLOC})
if(IDEM_SANITIZE)
  set(IDEM_PROGRAM_MALLOC system)
endif()
if(IDEM_BUILD_CLI AND IDEM_PROGRAM_MALLOC STREQUAL "tcmalloc")
  pkg_check_modules(tcmalloc REQUIRED IMPORTED_TARGET libtcmalloc_minimal)
endif()
if(IDEM_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
  include(GoogleTest)
endif()
if(IDEM_BUILD_BENCH)
  find_package(benchmark CONFIG REQUIRED)
endif()
