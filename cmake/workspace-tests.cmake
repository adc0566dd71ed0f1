# workspace-tests.cmake - the TauWorkspace controller and `tau workspace` e2e programs.
#
# Included from the top-level CMakeLists.txt after tau_aggregator and tau_cli exist.
#   ws_controller   tests/e2e/ws_controller_main.c: the workspace controller alone
#   e2e/workspace   tests/e2e/test_workspace.py against kube-sim (--authz rbac), TAU_PYTHON_TESTS only;
#                   `tau workspace|storage` is the real tau binary (TAU_WS_CLI)
#   e2e/aggregator-workspaces  tests/e2e/test_aggregator_workspaces.py: the real tau-aggregator

add_executable(ws_controller ${PROJECT_SOURCE_DIR}/tests/e2e/ws_controller_main.c)
target_compile_options(ws_controller PRIVATE ${TAU_WARNINGS})
target_link_libraries(ws_controller PRIVATE tau_aggregator)
set_target_properties(ws_controller PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/e2e)

if(TAU_PYTHON_TESTS)
  tau_add_python_suite(e2e/workspace
      PYTHON ${PYTHON3}
      TESTS test_workspace
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 900
      LABELS e2e python
      ENVIRONMENT "TAU_WS_CONTROLLER=$<TARGET_FILE:ws_controller>" "TAU_WS_CLI=$<TARGET_FILE:tau-cli>")
  tau_add_python_suite(e2e/storage
      PYTHON ${PYTHON3}
      TESTS test_storage
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 300
      LABELS e2e python
      ENVIRONMENT "TAU_WS_CLI=$<TARGET_FILE:tau-cli>")
  # The real tau-aggregator running the workspace controller, checked with the real `tau` and
  # over gRPC (grpcio: the system interpreter, and protoc).
  tau_add_python_suite(e2e/aggregator-workspaces
      TESTS test_aggregator_workspaces
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 600
      LABELS e2e python
      ENVIRONMENT "TAU_AGGREGATOR_BIN=$<TARGET_FILE:tau-aggregator>" "TAU_CLI=$<TARGET_FILE:tau-cli>"
                  "TAU_PROTOC=${TAU_PROTOC}")
endif()
