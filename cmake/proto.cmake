# proto.cmake - compile the wire contract with protoc-c at build time.
#
# Included from the top-level CMakeLists.txt. Generates C for proto/tau/inventory/v1/*.proto and
# grpc/health/v1/health.proto (Debian package grpc-proto) into ${CMAKE_BINARY_DIR}/gen, and
# exposes:
#   TAU_PROTO_SOURCES      generated .pb-c.c files (add them to the libtau target)
#   TAU_PROTO_HEADERS      generated .pb-c.h files
#   TAU_PROTO_INCLUDE_DIR  ${CMAKE_BINARY_DIR}/gen; sources include "tau/inventory/v1/inventory.pb-c.h"
#   TAU_PROTO_DIRS         the -I roots, for tools that need the .proto files again (Python tests)
#   tau_proto              an OBJECT library of the generated code, built with relaxed warnings
#                          (protoc-c output is not -Wpedantic clean); link it or use
#                          $<TARGET_OBJECTS:tau_proto>.
# Generated code is never committed: the headers #error on a libprotobuf-c version mismatch.

find_program(PROTOC_C_EXECUTABLE NAMES protoc-c protoc-gen-c REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PROTOBUF_C REQUIRED IMPORTED_TARGET libprotobuf-c)

set(TAU_GRPC_PROTO_DIR "/usr/share/grpc-proto" CACHE PATH
    "Root of the grpc-proto files (holds grpc/health/v1/health.proto)")
if(NOT EXISTS "${TAU_GRPC_PROTO_DIR}/grpc/health/v1/health.proto")
  message(FATAL_ERROR "health.proto not found under ${TAU_GRPC_PROTO_DIR}: install grpc-proto")
endif()

set(TAU_PROTO_INCLUDE_DIR "${CMAKE_BINARY_DIR}/gen")
set(TAU_PROTO_DIRS "${CMAKE_SOURCE_DIR}/proto" "${TAU_GRPC_PROTO_DIR}")
file(MAKE_DIRECTORY "${TAU_PROTO_INCLUDE_DIR}")

# (root directory, path relative to it) for every .proto we compile.
file(GLOB _tau_inventory_protos RELATIVE "${CMAKE_SOURCE_DIR}/proto"
     CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/proto/tau/inventory/v1/*.proto")
set(_tau_proto_pairs "")
foreach(_rel IN LISTS _tau_inventory_protos)
  list(APPEND _tau_proto_pairs "${CMAKE_SOURCE_DIR}/proto|${_rel}")
endforeach()
list(APPEND _tau_proto_pairs "${TAU_GRPC_PROTO_DIR}|grpc/health/v1/health.proto")

# Every generated file depends on every .proto: imports make finer tracking fragile.
set(_tau_all_protos "")
foreach(_pair IN LISTS _tau_proto_pairs)
  string(REPLACE "|" ";" _parts "${_pair}")
  list(GET _parts 0 _root)
  list(GET _parts 1 _rel)
  list(APPEND _tau_all_protos "${_root}/${_rel}")
endforeach()

set(TAU_PROTO_SOURCES "")
set(TAU_PROTO_HEADERS "")
foreach(_pair IN LISTS _tau_proto_pairs)
  string(REPLACE "|" ";" _parts "${_pair}")
  list(GET _parts 0 _root)
  list(GET _parts 1 _rel)
  string(REGEX REPLACE "\\.proto$" "" _stem "${_rel}")
  set(_c "${TAU_PROTO_INCLUDE_DIR}/${_stem}.pb-c.c")
  set(_h "${TAU_PROTO_INCLUDE_DIR}/${_stem}.pb-c.h")
  add_custom_command(
    OUTPUT "${_c}" "${_h}"
    COMMAND "${PROTOC_C_EXECUTABLE}"
            "-I${CMAKE_SOURCE_DIR}/proto" "-I${TAU_GRPC_PROTO_DIR}"
            "--c_out=${TAU_PROTO_INCLUDE_DIR}" "${_root}/${_rel}"
    DEPENDS ${_tau_all_protos}
    COMMENT "protoc-c ${_rel}"
    VERBATIM)
  list(APPEND TAU_PROTO_SOURCES "${_c}")
  list(APPEND TAU_PROTO_HEADERS "${_h}")
endforeach()
set_source_files_properties(${TAU_PROTO_SOURCES} ${TAU_PROTO_HEADERS} PROPERTIES GENERATED TRUE)
# Relaxed warnings wherever the generated sources are compiled (tau_proto or libtau itself).
set_source_files_properties(${TAU_PROTO_SOURCES} PROPERTIES COMPILE_OPTIONS "-w")

add_custom_target(tau_proto_gen DEPENDS ${TAU_PROTO_SOURCES} ${TAU_PROTO_HEADERS})

# Generated code with relaxed warnings; position independent so it can join a shared libtau.
add_library(tau_proto OBJECT ${TAU_PROTO_SOURCES})
add_dependencies(tau_proto tau_proto_gen)
target_include_directories(tau_proto PUBLIC "${TAU_PROTO_INCLUDE_DIR}")
target_link_libraries(tau_proto PUBLIC PkgConfig::PROTOBUF_C)
set_target_properties(tau_proto PROPERTIES POSITION_INDEPENDENT_CODE ON C_STANDARD 11)
target_compile_options(tau_proto PRIVATE -w)
