# kube-tests.cmake - the Kubernetes client's e2e programs, the demo and the driver.
#
# Included from the top-level CMakeLists.txt after the tau target exists.
#   kube_crud, kube_watch, kube_tls  cmocka suites run against kube-sim (tests/e2e/kube_*.c)
#   kube_elector                     one leader-election candidate (two run at once)
#   dra_watch                        cmocka suite: the aggregator's DRA watch (drawatch.c)
#   tau-kube-demo                    examples/tau-kube-demo.c: list nodes from a kubeconfig
#   e2e/kube-client                  tests/e2e/test_kube_client.py (run_suite.py): starts
#                                    kube-sim per test and runs the programs above; one ctest
#                                    test per test (each stands alone; kube_watch runs longest)
# bench/bench_informer.c is built by the top-level bench glob.

foreach(_kube_prog IN ITEMS kube_crud kube_watch kube_tls kube_elector)
  add_executable(${_kube_prog} ${PROJECT_SOURCE_DIR}/tests/e2e/${_kube_prog}.c
                               ${PROJECT_SOURCE_DIR}/tests/e2e/kube_e2e_common.c)
  target_compile_options(${_kube_prog} PRIVATE ${TAU_WARNINGS})
  target_include_directories(${_kube_prog} PRIVATE ${PROJECT_SOURCE_DIR}/tests/e2e)
  target_link_libraries(${_kube_prog} PRIVATE tau PkgConfig::CMOCKA)
  set_target_properties(${_kube_prog} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/e2e)
endforeach()

# dra_watch: the aggregator's DRA watch (aggregator/inventory/drawatch.c) against kube-sim.
add_executable(dra_watch ${PROJECT_SOURCE_DIR}/tests/e2e/dra_watch.c
                         ${PROJECT_SOURCE_DIR}/tests/e2e/kube_e2e_common.c)
target_compile_options(dra_watch PRIVATE ${TAU_WARNINGS})
target_include_directories(dra_watch PRIVATE ${PROJECT_SOURCE_DIR}/tests/e2e)
target_link_libraries(dra_watch PRIVATE tau_aggregator PkgConfig::CMOCKA)
set_target_properties(dra_watch PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/e2e)

add_executable(tau-kube-demo ${PROJECT_SOURCE_DIR}/examples/tau-kube-demo.c)
target_compile_options(tau-kube-demo PRIVATE ${TAU_WARNINGS})
target_link_libraries(tau-kube-demo PRIVATE tau)
set_target_properties(tau-kube-demo PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/e2e)
add_test(NAME examples/tau-kube-demo-help COMMAND tau-kube-demo --help)

if(TAU_PYTHON_TESTS)
  if(TAU_SANITIZE)
    set(_kube_slowdown 3)
  else()
    set(_kube_slowdown 1)
  endif()
  tau_add_python_suite(e2e/kube-client
      PYTHON ${PYTHON3}
      TESTS test_kube_client
      BY_TEST KubeClientE2E
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 600
      LABELS e2e python
      ENVIRONMENT "KUBE_E2E_BIN_DIR=${CMAKE_BINARY_DIR}/tests/e2e"
                  "KUBE_E2E_SLOWDOWN=${_kube_slowdown}")
endif()
