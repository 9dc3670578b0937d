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
if(IDEM_SANITIZE)
  target_compile_options(idem_build_flags INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(idem_build_flags INTERFACE -fsanitize=address,undefined)
endif()

# idem_library(NAME SOURCES ... DEPS ...): a library idem_NAME with alias idem::NAME; static
# unless BUILD_SHARED_LIBS is ON. Users see include/ (and C++20) only. A library declared under
# src/ is part of the package: installed and exported as idem::NAME (cmake/IdemPackage.cmake);
# one declared elsewhere (test support) is not.
function(idem_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(idem_${name} ${ARG_SOURCES})
  add_library(idem::${name} ALIAS idem_${name})
  target_include_directories(idem_${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>)
  target_compile_features(idem_${name} PUBLIC cxx_std_20)
  target_link_libraries(idem_${name} PUBLIC ${ARG_DEPS}
    PRIVATE $<BUILD_INTERFACE:idem_build_flags>)
  set_target_properties(idem_${name} PROPERTIES EXPORT_NAME ${name})
  set(src_dir "${PROJECT_SOURCE_DIR}/src")
  cmake_path(IS_PREFIX src_dir "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE in_src)
  if(in_src)
    set_property(GLOBAL APPEND PROPERTY IDEM_PACKAGE_LIBRARIES idem_${name})
  endif()
endfunction()

# idem_test(NAME SOURCES ... DEPS ... [LABELS ...] [FIXTURES ...]): a GoogleTest binary whose
# tests are registered one by one with CTest.
function(idem_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS;FIXTURES" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock
    idem_build_flags)
  set(props "")
  if(ARG_LABELS)
    list(APPEND props LABELS "${ARG_LABELS}")
  endif()
  if(ARG_FIXTURES)
    list(APPEND props FIXTURES_REQUIRED "${ARG_FIXTURES}")
  endif()
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
    PROPERTIES ${props})
endfunction()

# idem_bench(NAME SOURCES ... DEPS ...): a Google Benchmark binary (not run by CTest).
function(idem_bench name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark idem_build_flags)
endfunction()
