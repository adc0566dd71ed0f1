# Python suites (standard library plus PyYAML for cross-checks): kube-sim itself, driven by raw
# HTTP and by kubectl, the CRD checks, the shared-contract copy check, the log-key check and
# run_suite.py's own units check. They run none of our binaries (label pure-python). All run
# through tests/e2e/run_suite.py, one ctest test per TestCase class (cmake/test-tools.cmake): a
# skipped test shows as a skipped test.
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
  tau_add_python_suite(e2e/run-suite
      TESTS test_run_suite
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 60
      LABELS python pure-python)
  # e2e/log-keys  tests/e2e/test_log_keys.py: every literal tau_log key in the C sources is
  #               snake_case (one key case for every log line).
  tau_add_python_suite(e2e/log-keys
      TESTS test_log_keys
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 60
      LABELS python pure-python)
  tau_add_python_suite(e2e/shared-fixtures
      TESTS test_shared_fixtures
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 60
      LABELS python pure-python
      ENVIRONMENT "TAU_SHARED_DIR=${TAU_SHARED_DIR}")

  # e2e/demo  tests/e2e/test_demo.py: the README's demo command (scripts/demo.py) with kube-sim,
  #           real agents and aggregator and the CLI; asserts on what the demo observed (its
  #           --summary JSON and output): every agent connected, no missing node, the Cohort equal
  #           to the pool, the workspace Ready, the cordon shrinking the Cohort; and that a demo
  #           whose agent is refused fails naming it.
  tau_add_python_suite(e2e/demo
      TESTS test_demo
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 600
      COST 40
      LABELS e2e python
      ENVIRONMENT "TAU_DEMO_BUILD=${CMAKE_BINARY_DIR}")
endif()
