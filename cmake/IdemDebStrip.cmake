# CPack pre-build script (CPACK_PRE_BUILD_SCRIPTS, cmake/IdemDeb.cmake): runs once the files are
# staged and before the packages are made. It strips the debug info from the static libraries of
# libidem-dev: CPACK_STRIP_FILES strips the program only, and a RelWithDebInfo build's .a files
# carry 90 MiB of DWARF that no user of the package needs (a debugger wants the program's own).
# The symbols stay: a static library without them links nothing.
if(NOT CPACK_IDEM_STRIP)
  message(FATAL_ERROR "IdemDebStrip: CPACK_IDEM_STRIP (the strip program) is not set")
endif()
file(GLOB_RECURSE idem_static_libraries "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*.a")
foreach(library IN LISTS idem_static_libraries)
  execute_process(COMMAND "${CPACK_IDEM_STRIP}" --strip-debug "${library}"
    RESULT_VARIABLE result ERROR_VARIABLE error)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "IdemDebStrip: strip --strip-debug ${library} failed: ${error}")
  endif()
endforeach()
