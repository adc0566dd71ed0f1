# team-cli-tests.cmake - the `tau team list|status` e2e.
#
# Included from the top-level CMakeLists.txt after tau-cli exists.
#   e2e/cli-team   tests/e2e/test_cli_team.py against kube-sim (Kueue and taugrid CRDs, objects
#                  and statuses written by hand); `tau` is the real binary (TAU_CLI).

if(TAU_PYTHON_TESTS)
  add_test(NAME e2e/cli-team
           COMMAND ${PYTHON3} -m unittest -v test_cli_team
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e)
  set_tests_properties(e2e/cli-team PROPERTIES
      TIMEOUT 300
      LABELS "e2e;python"
      ENVIRONMENT "TAU_CLI=$<TARGET_FILE:tau-cli>")
endif()
