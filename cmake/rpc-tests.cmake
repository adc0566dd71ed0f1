# rpc-tests.cmake - e2e programs and the Python interoperability test of lib/rpc.
#
# Included from the top-level CMakeLists.txt after the tau target exists.
#   rpc_test_server  serves tau.inventory.v1 with canned answers (tests/e2e/rpc_test_server.c)
#   rpc_test_client  streams AgentReports to a server (tests/e2e/rpc_test_client.c)
#   rpc-interop      /usr/bin/python3 -m unittest test_rpc_interop: Python grpcio against both,
#                    plaintext and TLS (openssl CLI makes a throwaway CA). Needs python3-grpcio,
#                    python3-protobuf, protobuf-compiler (protoc) and openssl.

foreach(_rpc_prog IN ITEMS rpc_test_server rpc_test_client)
  add_executable(${_rpc_prog} ${PROJECT_SOURCE_DIR}/tests/e2e/${_rpc_prog}.c)
  target_compile_options(${_rpc_prog} PRIVATE ${TAU_WARNINGS})
  target_link_libraries(${_rpc_prog} PRIVATE tau)
  set_target_properties(${_rpc_prog} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/e2e)
endforeach()

find_program(TAU_PROTOC_EXECUTABLE NAMES protoc)
find_program(TAU_OPENSSL_EXECUTABLE NAMES openssl)
if(NOT DEFINED SYSTEM_PYTHON3 OR NOT SYSTEM_PYTHON3)
  find_program(SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
endif()

if((NOT DEFINED TAU_PYTHON_TESTS OR TAU_PYTHON_TESTS) AND SYSTEM_PYTHON3 AND TAU_PROTOC_EXECUTABLE
   AND TAU_OPENSSL_EXECUTABLE)
  add_test(NAME rpc-interop
           COMMAND ${SYSTEM_PYTHON3} -m unittest -v test_rpc_interop
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}/tests/e2e)
  set_tests_properties(rpc-interop PROPERTIES
      TIMEOUT 300
      LABELS "e2e;python"
      ENVIRONMENT "TAU_RPC_TEST_SERVER=$<TARGET_FILE:rpc_test_server>;TAU_RPC_TEST_CLIENT=$<TARGET_FILE:rpc_test_client>;TAU_PROTOC=${TAU_PROTOC_EXECUTABLE};TAU_OPENSSL=${TAU_OPENSSL_EXECUTABLE};TAU_PROTO_DIR=${PROJECT_SOURCE_DIR}/proto;TAU_GRPC_PROTO_DIR=${TAU_GRPC_PROTO_DIR}")
elseif(NOT DEFINED TAU_PYTHON_TESTS OR TAU_PYTHON_TESTS)
  message(STATUS "rpc-interop test skipped: needs /usr/bin/python3, protoc and openssl")
endif()
