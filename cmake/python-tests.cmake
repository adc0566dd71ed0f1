# Python suites (standard library only): kube-sim itself, driven by raw HTTP and by kubectl, and
# the CRD checks.  They run none of our binaries, so they carry the label pure-python and the
# sanitizer tree skips them (make test-asan).
if(TAU_PYTHON_TESTS)
  add_test(NAME kube-sim
           COMMAND ${PYTHON3} -m unittest discover -s ${PROJECT_SOURCE_DIR}/tests/kube-sim -p "test_*.py" -v
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/kube-sim)
  set_tests_properties(kube-sim PROPERTIES TIMEOUT 900 LABELS "python;pure-python")
endif()
if(TAU_PYTHON_TESTS)
  add_test(NAME e2e/crds COMMAND ${PYTHON3} ${PROJECT_SOURCE_DIR}/tests/e2e/test_crds.py)
  set_tests_properties(e2e/crds PROPERTIES TIMEOUT 300 LABELS "python;pure-python")
endif()

# The README's demo command, as a smoke test: kube-sim, real agents and aggregator, the CLI.
if(TAU_PYTHON_TESTS)
  add_test(NAME e2e/demo
           COMMAND ${PYTHON3} ${PROJECT_SOURCE_DIR}/scripts/demo.py --build ${CMAKE_BINARY_DIR})
  set_tests_properties(e2e/demo PROPERTIES TIMEOUT 600 LABELS "e2e;python"
                       PASS_REGULAR_EXPRESSION "Demo done")
endif()
