# Python suites (standard library only): kube-sim itself, driven by raw HTTP and by kubectl.
if(TAU_PYTHON_TESTS)
  add_test(NAME kube-sim
           COMMAND ${PYTHON3} -m unittest discover -s ${PROJECT_SOURCE_DIR}/tests/kube-sim -p "test_*.py" -v
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/kube-sim)
  set_tests_properties(kube-sim PROPERTIES TIMEOUT 900 LABELS python)
endif()
