# Warnings and sanitizers live in one INTERFACE target that every idem target links.
add_library(idem_build_flags INTERFACE)
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

# idem_library(NAME SOURCES ... DEPS ...): a static library idem_NAME with alias idem::NAME.
function(idem_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(idem_${name} STATIC ${ARG_SOURCES})
  add_library(idem::${name} ALIAS idem_${name})
  target_include_directories(idem_${name} PUBLIC
    ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(idem_${name} PUBLIC ${ARG_DEPS} PRIVATE idem_build_flags)
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
