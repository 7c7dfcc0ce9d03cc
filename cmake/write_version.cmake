# Writes torch_mlu/version.py from cmake/version.py.in at every build; the file
# is rewritten only when its content changes (configure_file), so an unchanged
# revision rebuilds nothing. Inputs (-D): TEMPLATE, OUT, SOURCE_DIR, VERSION,
# TORCH_VERSION, BUILD_TYPE, CXX_COMPILER, SANITIZERS.
execute_process(
  COMMAND git -C "${SOURCE_DIR}" rev-parse HEAD
  OUTPUT_VARIABLE GIT_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _git_result ERROR_QUIET)
if(NOT _git_result EQUAL 0)
  set(GIT_VERSION "Unknown")  # built from an archive, not a clone
endif()
if(BUILD_TYPE STREQUAL "Debug")
  set(DEBUG True)
else()
  set(DEBUG False)
endif()
configure_file("${TEMPLATE}" "${OUT}" @ONLY)
