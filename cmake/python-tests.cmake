# Python suites (standard library plus PyYAML for cross-checks): kube-sim itself, driven by raw
# HTTP and by kubectl, the CRD checks and the shared-contract copy check. They run none of our
# binaries, so they carry the label pure-python and the sanitizer tree skips them
# (make test-asan). All run through tests/e2e/run_suite.py (cmake/test-tools.cmake): a skipped
# test shows as a skipped suite.
if(TAU_PYTHON_TESTS)
  tau_add_python_suite(kube-sim
      DISCOVER ${PROJECT_SOURCE_DIR}/tests/kube-sim
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/kube-sim
      TIMEOUT 900
      LABELS python pure-python)
  tau_add_python_suite(e2e/crds
      TESTS test_crds
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 300
      LABELS python pure-python)
  tau_add_python_suite(e2e/shared-fixtures
      TESTS test_shared_fixtures
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 60
      LABELS python pure-python
      ENVIRONMENT "TAU_SHARED_DIR=${TAU_SHARED_DIR}")

  # The README's demo command, as a smoke test: kube-sim, real agents and aggregator, the CLI.
  # It passes on its exit status alone: every step checked, every daemon stopped with SIGTERM
  # (kube-sim with SIGINT) and exiting 0 (scripts/demo.py).
  add_test(NAME e2e/demo
           COMMAND ${PYTHON3} ${PROJECT_SOURCE_DIR}/scripts/demo.py --build ${CMAKE_BINARY_DIR})
  set_tests_properties(e2e/demo PROPERTIES TIMEOUT 600 LABELS "e2e;python")
endif()
