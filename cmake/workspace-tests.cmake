# workspace-tests.cmake - the TauWorkspace controller and `tau workspace` e2e programs.
#
# Included from the top-level CMakeLists.txt after tau_aggregator and tau_cli exist.
#   ws_controller   tests/e2e/ws_controller_main.c: the workspace controller alone
#   tau_ws_cli      tests/e2e/tau_ws_cli_main.c: `tau workspace|storage` before main.c wires them
#   e2e/workspace   tests/e2e/test_workspace.py against kube-sim (--authz rbac), TAU_PYTHON_TESTS only

add_executable(ws_controller ${PROJECT_SOURCE_DIR}/tests/e2e/ws_controller_main.c)
target_compile_options(ws_controller PRIVATE ${TAU_WARNINGS})
target_link_libraries(ws_controller PRIVATE tau_aggregator)
set_target_properties(ws_controller PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/e2e)

add_executable(tau_ws_cli ${PROJECT_SOURCE_DIR}/tests/e2e/tau_ws_cli_main.c)
target_compile_options(tau_ws_cli PRIVATE ${TAU_WARNINGS})
target_link_libraries(tau_ws_cli PRIVATE tau_cli)
set_target_properties(tau_ws_cli PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/e2e)

if(TAU_PYTHON_TESTS)
  add_test(NAME e2e/workspace
           COMMAND ${PYTHON3} -m unittest -v test_workspace
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e)
  set_tests_properties(e2e/workspace PROPERTIES
      TIMEOUT 900
      LABELS "e2e;python"
      ENVIRONMENT "TAU_WS_CONTROLLER=$<TARGET_FILE:ws_controller>;TAU_WS_CLI=$<TARGET_FILE:tau_ws_cli>")
endif()

if(TAU_PYTHON_TESTS)
  add_test(NAME e2e/storage
           COMMAND ${PYTHON3} -m unittest -v test_storage
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e)
  set_tests_properties(e2e/storage PROPERTIES
      TIMEOUT 300
      LABELS "e2e;python"
      ENVIRONMENT "TAU_WS_CLI=$<TARGET_FILE:tau_ws_cli>")
endif()
