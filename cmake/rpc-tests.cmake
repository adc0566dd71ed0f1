# rpc-tests.cmake - e2e programs and the Python interoperability test of lib/rpc.
#
# Included from the top-level CMakeLists.txt after the tau target exists.
#   rpc_test_server  serves tau.inventory.v1 with canned answers (tests/e2e/rpc_test_server.c)
#   rpc_test_client  streams AgentReports to a server (tests/e2e/rpc_test_client.c)
#   rpc-interop      tests/e2e/test_rpc_interop.py (run_suite.py, /usr/bin/python3): Python grpcio
#                    against both, plaintext and TLS (openssl CLI makes a throwaway CA); its tools
#                    are required by cmake/test-tools.cmake.

foreach(_rpc_prog IN ITEMS rpc_test_server rpc_test_client)
  add_executable(${_rpc_prog} ${PROJECT_SOURCE_DIR}/tests/e2e/${_rpc_prog}.c)
  target_compile_options(${_rpc_prog} PRIVATE ${TAU_WARNINGS})
  target_link_libraries(${_rpc_prog} PRIVATE tau)
  set_target_properties(${_rpc_prog} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/e2e)
endforeach()

if(TAU_PYTHON_TESTS)
  tau_add_python_suite(rpc-interop
      TESTS test_rpc_interop
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e
      TIMEOUT 300
      LABELS e2e python
      ENVIRONMENT "TAU_RPC_TEST_SERVER=$<TARGET_FILE:rpc_test_server>"
                  "TAU_RPC_TEST_CLIENT=$<TARGET_FILE:rpc_test_client>"
                  "TAU_PROTOC=${TAU_PROTOC}" "TAU_OPENSSL=${TAU_OPENSSL}"
                  "TAU_PROTO_DIR=${PROJECT_SOURCE_DIR}/proto"
                  "TAU_GRPC_PROTO_DIR=${TAU_GRPC_PROTO_DIR}")
endif()
