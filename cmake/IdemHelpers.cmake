# Warnings and sanitizers live in one INTERFACE target that every idem target links. It also
# carries src/ as an include directory, for idem's own targets only: src/ is never part of what
# an installed or add_subdirectory'd idem exports.
add_library(idem_build_flags INTERFACE)
target_include_directories(idem_build_flags INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>)
target_compile_options(idem_build_flags INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
  -Wcast-align -Woverloaded-virtual -Wnull-dereference -Wimplicit-fallthrough
  # C++20 designated initializers leave the fields they omit value-initialised on purpose.
  -Wno-missing-field-initializers
  $<$<BOOL:${IDEM_WERROR}>:-Werror>)
# A unity build (CMAKE_UNITY_BUILD, which scripts/test.sh turns on to shorten CI's from-scratch
# build: ~8 files compiled as one) makes every file an included one, and GCC then reports each
# coroutine frame and struct that holds a type of a file's anonymous namespace
# (-Wsubobject-linkage), which it rightly leaves alone in the file's own compile. The warning
# stays on in the ordinary builds.
if(CMAKE_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(idem_build_flags INTERFACE -Wno-subobject-linkage)
endif()
# The sanitizers of IDEM_SANITIZE, one list for compiling, linking, and what the installed package
# (CMake and pkg-config) asks of its users' links. GCC's -fsanitize=undefined leaves out
# float-cast-overflow (a double converted to an integer that cannot hold it, e.g. a parsed
# --lease 1e30s); Clang's includes it. Named for both.
set(IDEM_SANITIZER_FLAG -fsanitize=address,undefined,float-cast-overflow)
if(IDEM_SANITIZE)
  target_compile_options(idem_build_flags INTERFACE
    ${IDEM_SANITIZER_FLAG} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(idem_build_flags INTERFACE ${IDEM_SANITIZER_FLAG})
  # idem's executables are linked at a fixed address (-no-pie) in a sanitizer build. The
  # sanitizers' static records (UBSan's per-check source locations and types, ASan's global
  # descriptors) hold pointers, 3.5 million relocations in the idem program, which a
  # position-independent executable applies at every start, copying ~95 MB of data pages to do it:
  # `idem --version` took 939 ms of CPU as a PIE and 360 ms without, a gateway_test case ~0.2 s
  # less. CTest starts ~1,700 test processes and the e2e tests start idem many times more. The
  # objects stay PIE-compiled (they link either way). Not with shared libraries (a sanitized
  # libidem's globals would be copy-relocated into the program, out of the sanitizer's view), and
  # never without sanitizers: the release and package presets keep PIE.
  if(NOT BUILD_SHARED_LIBS)
    target_link_options(idem_build_flags INTERFACE
      $<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-no-pie>)
  endif()
  # The sanitized executables are large (the idem program 165 MB, gateway_test 100 MB) and CI
  # links ~70 of them: linked by lld, or else gold, instead of the default GNU ld. Linking idem
  # took 8.1 s of CPU with GNU ld, 3.8 with gold, 2.6 with lld; gateway_test 4.9, 2.5 and 1.6.
  include(CheckLinkerFlag)
  check_linker_flag(CXX -fuse-ld=lld IDEM_HAVE_LLD)
  if(IDEM_HAVE_LLD)
    target_link_options(idem_build_flags INTERFACE -fuse-ld=lld)
  else()
    check_linker_flag(CXX -fuse-ld=gold IDEM_HAVE_GOLD)
    if(IDEM_HAVE_GOLD)
      target_link_options(idem_build_flags INTERFACE -fuse-ld=gold)
    endif()
  endif()
  # Clang 14's function-type check cannot assemble C++20 coroutines when coverage instrumentation
  # (the fuzz preset) is on too ("Cannot represent a difference across sections"); the check
  # only concerns calls through mistyped function pointers, which C++ code does not make.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    target_compile_options(idem_build_flags INTERFACE -fno-sanitize=function)
  endif()
endif()

# Precompiled headers for from-scratch builds such as CI's (IDEM_PCH, on in the dev preset): the
# standard, fmt, Abseil and GoogleTest headers are parsed once per target instead of once per
# file. Every test executable of idem_test shares one precompiled header (idem_test_pch's: the
# same flags, GCC checks the macros it depends on), and every target using Asio and Beast another
# with them too (idem_use_asio_pch; its tests idem_test_asio_pch).
# Not with a compiler launcher: ccache does not cache a compile that uses a precompiled header
# (unless its sloppiness allows it), and a warm cache is faster anyway.
option(IDEM_PCH "Precompile the headers most of idem's files include" OFF)
if(IDEM_PCH AND CMAKE_CXX_COMPILER_LAUNCHER)
  message(STATUS "IDEM_PCH is ignored with a compiler launcher (${CMAKE_CXX_COMPILER_LAUNCHER})")
  set(IDEM_PCH OFF)
endif()
set(IDEM_PCH_HEADERS <algorithm> <chrono> <cstdint> <functional> <map> <memory> <optional>
  <string> <string_view> <vector> <fmt/format.h> <absl/status/status.h> <absl/status/statusor.h>)

# idem_precompile_headers(TARGET [HEADERS ...]): TARGET's own precompiled header, of
# IDEM_PCH_HEADERS and HEADERS; for a target of several files (one file gains nothing).
function(idem_precompile_headers target)
  if(IDEM_PCH)
    target_precompile_headers(${target} PRIVATE ${IDEM_PCH_HEADERS} ${ARGN})
  endif()
endfunction()

# idem_use_asio_pch(TARGET): TARGET, whose files use Asio or Beast (it links idem::asio), uses the
# precompiled header every such target shares: IDEM_PCH_HEADERS and src/asio/asio_pch.h, whose
# Asio and Beast headers took ~4 s of CPU to parse in each of ~75 files (-g1, sanitizers).
function(idem_use_asio_pch target)
  if(NOT IDEM_PCH)
    return()
  endif()
  if(NOT TARGET idem_asio_pch)
    # A library of one empty file whose only product is the shared header (as idem_test_pch's).
    file(WRITE ${PROJECT_BINARY_DIR}/idem_asio_pch.cc "")
    add_library(idem_asio_pch STATIC ${PROJECT_BINARY_DIR}/idem_asio_pch.cc)
    target_link_libraries(idem_asio_pch PRIVATE idem::asio fmt::fmt absl::status absl::statusor
      idem_build_flags)
    target_precompile_headers(idem_asio_pch PRIVATE ${IDEM_PCH_HEADERS}
      ${PROJECT_SOURCE_DIR}/src/asio/asio_pch.h)
  endif()
  # The macros the header was compiled with (fmt's FMT_SHARED, Asio's separate compilation).
  target_link_libraries(${target} PRIVATE fmt::fmt idem::asio)
  target_precompile_headers(${target} REUSE_FROM idem_asio_pch)
endfunction()

# idem_links_asio(TARGET VAR): VAR is TRUE when TARGET links idem_asio, directly or through the
# libraries it links (as far as they are known when this is called).
function(idem_links_asio target var)
  set(pending ${target})
  set(seen "")
  set(found FALSE)
  while(pending AND NOT found)
    list(POP_FRONT pending t)
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" t "${t}")
    if(NOT TARGET "${t}" OR t IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${t})
    get_target_property(aliased ${t} ALIASED_TARGET)
    if(aliased)
      set(t ${aliased})
    endif()
    if(t STREQUAL "idem_asio")
      set(found TRUE)
    endif()
    get_target_property(imported ${t} IMPORTED)
    if(imported)
      continue()
    endif()
    get_target_property(links ${t} INTERFACE_LINK_LIBRARIES)
    if(t STREQUAL target)
      get_target_property(links ${t} LINK_LIBRARIES)
    endif()
    if(links)
      list(APPEND pending ${links})
    endif()
  endwhile()
  set(${var} ${found} PARENT_SCOPE)
endfunction()

# idem_library(NAME [PACKAGE] [ASIO] SOURCES ... DEPS ...): a library idem_NAME with alias
# idem::NAME. Users of the target see include/ and C++20 only (src/ comes from idem_build_flags,
# for idem's own targets). PACKAGE marks a library of the installed package: it is installed and
# exported as idem::NAME (cmake/IdemPackage.cmake; list its dependencies in
# cmake/idemConfig.cmake.in and cmake/IdemPackage.cmake's pkg-config lines too), and is shared
# when BUILD_SHARED_LIBS is ON, with a versioned soname and only idem's symbols exported
# (cmake/idem.map). A library without PACKAGE (the program's pieces, test support) is always
# static and never installed. ASIO marks a library whose files use Asio or Beast: it links
# idem::asio (src/asio) and uses the Asio users' precompiled header (idem_use_asio_pch).
function(idem_library name)
  cmake_parse_arguments(ARG "PACKAGE;ASIO" "" "SOURCES;DEPS" ${ARGN})
  if(ARG_PACKAGE)
    add_library(idem_${name} ${ARG_SOURCES})
    set_property(GLOBAL APPEND PROPERTY IDEM_PACKAGE_LIBRARIES idem_${name})
    idem_package_library_properties(idem_${name})
  else()
    add_library(idem_${name} STATIC ${ARG_SOURCES})
  endif()
  add_library(idem::${name} ALIAS idem_${name})
  target_include_directories(idem_${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>)
  target_compile_features(idem_${name} PUBLIC cxx_std_20)
  target_link_libraries(idem_${name} PUBLIC ${ARG_DEPS}
    PRIVATE $<BUILD_INTERFACE:idem_build_flags>)
  set_target_properties(idem_${name} PROPERTIES EXPORT_NAME ${name})
  list(LENGTH ARG_SOURCES source_count)
  if(ARG_ASIO)
    target_link_libraries(idem_${name} PUBLIC idem::asio)
    idem_use_asio_pch(idem_${name})
  elseif(source_count GREATER_EQUAL 4)
    idem_precompile_headers(idem_${name})
  endif()
endfunction()

# The properties of a library of the installed package (see idem_library's PACKAGE).
function(idem_package_library_properties target)
  set_target_properties(${target} PROPERTIES
    VERSION ${PROJECT_VERSION} SOVERSION ${IDEM_SOVERSION} POSITION_INDEPENDENT_CODE ON)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "SHARED_LIBRARY")
    target_link_options(${target} PRIVATE
      "LINKER:--version-script=${PROJECT_SOURCE_DIR}/cmake/idem.map")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/idem.map)
  endif()
  if(IDEM_SANITIZE)
    # A sanitized libidem needs the sanitizers' runtime wherever it is linked, installed or not.
    target_link_options(${target} INTERFACE ${IDEM_SANITIZER_FLAG})
  endif()
endfunction()

# idem_install_program(TARGET ... [COMPONENT NAME]): installs programs (the idem command, the
# examples) into the package's bin/ when idem generates install rules (IDEM_INSTALL), as part of
# install component NAME (default "examples", which no Debian package carries; the idem program
# is component "idem": cmake/IdemDeb.cmake).
function(idem_install_program)
  cmake_parse_arguments(ARG "" "COMPONENT" "" ${ARGN})
  if(NOT ARG_COMPONENT)
    set(ARG_COMPONENT examples)
  endif()
  if(IDEM_INSTALL)
    install(TARGETS ${ARG_UNPARSED_ARGUMENTS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
      COMPONENT ${ARG_COMPONENT})
  endif()
endfunction()

# idem_test(NAME SOURCES ... DEPS ... [LABELS ...] [FIXTURES F] [TEST_FILTER EXPR] [COST N]): a
# GoogleTest binary whose tests are registered one by one with CTest (those EXPR selects, a
# --gtest_filter expression). COST: CTest starts tests of a higher cost first; give it to tests
# of a minute or more, so that they overlap with the short ones instead of ending the run alone. One fixture at most: a list of fixtures does not survive gtest_discover_tests'
# PROPERTIES (only its first would be required), so a test needing two is added by name with
# add_test and set_tests_properties, and left out here by TEST_FILTER.
function(idem_test name)
  cmake_parse_arguments(ARG "" "TEST_FILTER;COST" "SOURCES;DEPS;LABELS;FIXTURES" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock
    idem_build_flags)
  idem_use_test_pch(${name})
  idem_test_register(${name} TEST_FILTER "${ARG_TEST_FILTER}" COST "${ARG_COST}"
    LABELS ${ARG_LABELS} FIXTURES ${ARG_FIXTURES})
endfunction()

# idem_use_test_pch(TARGET): TARGET, a test executable, uses the tests' shared precompiled header;
# one that links idem::asio uses idem_test_asio_pch, the same with src/asio/asio_pch.h.
function(idem_use_test_pch target)
  if(NOT IDEM_PCH)
    return()
  endif()
  idem_links_asio(${target} links_asio)
  if(links_asio)
    if(NOT TARGET idem_test_asio_pch)
      file(WRITE ${PROJECT_BINARY_DIR}/idem_test_asio_pch.cc "")
      add_library(idem_test_asio_pch STATIC ${PROJECT_BINARY_DIR}/idem_test_asio_pch.cc)
      target_link_libraries(idem_test_asio_pch PRIVATE GTest::gtest GTest::gmock fmt::fmt
        absl::status absl::statusor idem::asio idem_build_flags)
      target_precompile_headers(idem_test_asio_pch PRIVATE ${IDEM_PCH_HEADERS} <atomic> <thread>
        <gtest/gtest.h> <gmock/gmock.h> ${PROJECT_SOURCE_DIR}/src/asio/asio_pch.h)
    endif()
    target_link_libraries(${target} PRIVATE fmt::fmt)
    target_precompile_headers(${target} REUSE_FROM idem_test_asio_pch)
    return()
  endif()
  if(NOT TARGET idem_test_pch)
    # A library of one empty file whose only product is the shared header. fmt::fmt is linked
    # by every test (its FMT_SHARED must be defined alike wherever the header is used).
    file(WRITE ${PROJECT_BINARY_DIR}/idem_test_pch.cc "")
    add_library(idem_test_pch STATIC ${PROJECT_BINARY_DIR}/idem_test_pch.cc)
    target_link_libraries(idem_test_pch PRIVATE GTest::gtest GTest::gmock fmt::fmt
      absl::status absl::statusor idem_build_flags)
    target_precompile_headers(idem_test_pch PRIVATE ${IDEM_PCH_HEADERS} <atomic> <thread>
      <gtest/gtest.h> <gmock/gmock.h>)
  endif()
  target_link_libraries(${target} PRIVATE fmt::fmt)
  target_precompile_headers(${target} REUSE_FROM idem_test_pch)
endfunction()

# idem_test_register(NAME [TEST_PREFIX P] [TEST_FILTER EXPR] [LABELS ...] [FIXTURES F]
# [ENVIRONMENT VAR=VALUE] [COST N]): registers the tests of GoogleTest binary NAME (once more) with CTest:
# those EXPR selects, named with the prefix P, run with VAR=VALUE in their environment. This is how
# one binary runs its tests on several stores (IDEM_E2E_STORE=postgres, tests/cli/e2e_store.h)
# instead of being compiled once per store. One fixture and one variable at most (see idem_test).
function(idem_test_register name)
  cmake_parse_arguments(ARG "" "TEST_PREFIX;TEST_FILTER;ENVIRONMENT;COST" "LABELS;FIXTURES"
    ${ARGN})
  list(LENGTH ARG_FIXTURES fixture_count)
  if(fixture_count GREATER 1)
    message(FATAL_ERROR "idem_test(${name}): FIXTURES takes one fixture (got ${ARG_FIXTURES}); "
      "add the tests that need more by name (see idem_test's comment)")
  endif()
  set(props "")
  if(ARG_LABELS)
    list(APPEND props LABELS "${ARG_LABELS}")
  endif()
  if(ARG_FIXTURES)
    list(APPEND props FIXTURES_REQUIRED "${ARG_FIXTURES}")
  endif()
  if(ARG_ENVIRONMENT)
    list(APPEND props ENVIRONMENT "${ARG_ENVIRONMENT}")
  endif()
  if(ARG_COST)
    list(APPEND props COST "${ARG_COST}")
  endif()
  set(options "")
  if(ARG_TEST_FILTER)
    list(APPEND options TEST_FILTER "${ARG_TEST_FILTER}")
  endif()
  if(ARG_TEST_PREFIX)
    list(APPEND options TEST_PREFIX "${ARG_TEST_PREFIX}")
  endif()
  # The tests are listed once, when the binary is linked (POST_BUILD), beside the build's other
  # work; PRE_TEST listed every binary again at the start of each ctest run, one after another
  # (77 binaries, ~1 s each with the sanitizers) while no test ran.
  gtest_discover_tests(${name} DISCOVERY_MODE POST_BUILD DISCOVERY_TIMEOUT 60 ${options}
    PROPERTIES ${props})
endfunction()

# idem_bench(NAME SOURCES ... DEPS ...): a Google Benchmark binary (not run by CTest).
function(idem_bench name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark idem_build_flags)
endfunction()
