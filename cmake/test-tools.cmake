# test-tools.cmake - the tools the test suites need, and how a Python suite is registered.
#
# Included from the top-level CMakeLists.txt before the suites (cmake/*-tests.cmake). With
# TAU_PYTHON_TESTS on (the default), every tool a registered suite needs must be here: a missing
# one is a configure error naming the Debian package to install (scripts/install-deps installs
# them all), never a suite that quietly drops out. -DTAU_PYTHON_TESTS=OFF builds without the
# Python suites, on purpose.
#
#   TAU_PROTOC      protoc (protobuf-compiler): the Python suites make message classes with it
#   TAU_OPENSSL     openssl: throwaway CAs and certificates
#   TAU_KUBECTL     kubectl (kubernetes-client): suites drive kube-sim with it
#   TAU_PROMTOOL    promtool (prometheus): e2e/monitoring checks and unit-tests the alert rules
#   TAU_NODE        node (nodejs) and the pinned @bufbuild/cel in .tools/cel (scripts/install-tools):
#                   kube-sim evaluates CRD validation rules with them and refuses to start without
#   SYSTEM_PYTHON3  /usr/bin/python3 with grpc, google.protobuf and yaml (python3-grpcio,
#                   python3-protobuf, python3-yaml: Debian installs them for it only)
#   TAU_SHARED_DIR  the shared contract directory (optional; e2e/shared-fixtures skips without)
#
# tau_add_python_suite(<name> [PYTHON <interpreter>] (TESTS <module>... | DISCOVER <dir>)
#                      [BY_TEST <class>...] WORKING_DIRECTORY <dir> TIMEOUT <s>
#                      LABELS <label>... [PROCESSORS <n>] [COST <s>] [COSTS <unit>=<s>...]
#                      [ENVIRONMENT <VAR=value>...])
#   registers one ctest test per unit of the suite, named <name>/<unit>: a unit is a TestCase
#   class with tests (one setUpClass, one process), or one test of a BY_TEST class (for classes
#   whose tests stand alone and run long). Small units let `ctest -j` balance the run. The
#   units are read from the modules' source at configure time (run_suite.py --list-units); a
#   change to a module configures again, and each unit checks when it runs that the registered
#   units still cover every test of its module, each once (run_suite.py --units), so no test
#   drops out unseen. DISCOVER takes every test_*.py in <dir>. TIMEOUT and PROCESSORS apply to
#   each unit; PROCESSORS (default 1) is how many cores a unit keeps busy (suites that start
#   several daemons), so ctest does not run more beside it than the machine holds. COST (about
#   the seconds a unit takes; COSTS sets it for single units) makes a clean tree, which has no
#   timings yet, start the long units first; once ctest has timings
#   (Testing/Temporary/CTestCostData.txt) it uses those. A unit with
#   a skipped test exits 77, which ctest shows as skipped (SKIP_RETURN_CODE), not as passed.
#   PYTHON defaults to SYSTEM_PYTHON3.
set(TAU_SKIP_RETURN_CODE 77)
set(TAU_RUN_SUITE ${PROJECT_SOURCE_DIR}/tests/e2e/run_suite.py)

set(TAU_SHARED_DIR_DEFAULT "")
if(EXISTS "${PROJECT_SOURCE_DIR}/../shared/fixtures")
  get_filename_component(TAU_SHARED_DIR_DEFAULT "${PROJECT_SOURCE_DIR}/../shared" ABSOLUTE)
endif()
set(TAU_SHARED_DIR "${TAU_SHARED_DIR_DEFAULT}" CACHE PATH
    "The shared contract directory (holds fixtures/taugrid-crds); empty: e2e/shared-fixtures skips")

# tau_require_program(<var> <program> <debian package>)
function(tau_require_program var program package)
  find_program(${var} NAMES ${program})
  if(NOT ${var})
    message(FATAL_ERROR
        "The test suites need `${program}`: install the Debian package ${package} "
        "(scripts/install-deps installs every test tool), or configure with "
        "-DTAU_PYTHON_TESTS=OFF to build without the Python suites.")
  endif()
endfunction()

# tau_require_python_module(<module> <debian package>): SYSTEM_PYTHON3 must import it.
function(tau_require_python_module module package)
  execute_process(COMMAND ${SYSTEM_PYTHON3} -c "import ${module}"
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR
        "The test suites need the Python module ${module} for ${SYSTEM_PYTHON3}: install the "
        "Debian package ${package} (scripts/install-deps installs every test tool), or "
        "configure with -DTAU_PYTHON_TESTS=OFF. ${err}")
  endif()
endfunction()

if(TAU_PYTHON_TESTS)
  if(NOT SYSTEM_PYTHON3)
    message(FATAL_ERROR "The test suites need /usr/bin/python3: install the Debian package "
                        "python3, or configure with -DTAU_PYTHON_TESTS=OFF.")
  endif()
  tau_require_program(TAU_PROTOC protoc protobuf-compiler)
  tau_require_program(TAU_OPENSSL openssl openssl)
  tau_require_program(TAU_KUBECTL kubectl kubernetes-client)
  tau_require_program(TAU_PROMTOOL promtool prometheus)
  tau_require_program(TAU_NODE node nodejs)
  execute_process(COMMAND ${SYSTEM_PYTHON3} -c
                  "import sys; sys.path.insert(0, sys.argv[1]); from kubesim import cel; cel.check_runtime()"
                  ${PROJECT_SOURCE_DIR}/tests/kube-sim
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "The test suites need kube-sim's CEL runtime: run scripts/install-tools "
                        "(scripts/install-deps runs it), or configure with -DTAU_PYTHON_TESTS=OFF. "
                        "${err}")
  endif()
  tau_require_python_module(grpc python3-grpcio)
  tau_require_python_module(google.protobuf python3-protobuf)
  tau_require_python_module(yaml python3-yaml)
endif()

function(tau_add_python_suite name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "PYTHON;DISCOVER;WORKING_DIRECTORY;TIMEOUT;PROCESSORS;COST"
                        "TESTS;BY_TEST;COSTS;LABELS;ENVIRONMENT")
  if(NOT arg_PYTHON)
    set(arg_PYTHON ${SYSTEM_PYTHON3})
  endif()
  if(NOT arg_PROCESSORS)
    set(arg_PROCESSORS 1)
  endif()
  if(NOT arg_COST)
    set(arg_COST 0)
  endif()
  if(arg_DISCOVER)
    file(GLOB files CONFIGURE_DEPENDS ${arg_DISCOVER}/test_*.py)
    set(modules "")
    foreach(f IN LISTS files)
      get_filename_component(m ${f} NAME_WE)
      list(APPEND modules ${m})
    endforeach()
    list(SORT modules)
  elseif(arg_TESTS)
    set(modules ${arg_TESTS})
  else()
    message(FATAL_ERROR "tau_add_python_suite(${name}): give TESTS or DISCOVER")
  endif()
  set(by_test "")
  foreach(c IN LISTS arg_BY_TEST)
    list(APPEND by_test --by-test ${c})
  endforeach()
  set(registered "")
  foreach(module IN LISTS modules)
    set(file ${arg_WORKING_DIRECTORY}/${module}.py)
    if(NOT EXISTS ${file})
      message(FATAL_ERROR "tau_add_python_suite(${name}): no ${file}")
    endif()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
    execute_process(COMMAND ${SYSTEM_PYTHON3} ${TAU_RUN_SUITE} --list-units ${file} ${by_test}
                    OUTPUT_VARIABLE units RESULT_VARIABLE rc ERROR_VARIABLE err
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT rc EQUAL 0 OR units STREQUAL "")
      message(FATAL_ERROR "tau_add_python_suite(${name}): no test units in ${file}: ${err}")
    endif()
    string(REPLACE "\n" ";" units "${units}")
    string(REPLACE ";" "," spec "${units}")
    foreach(unit IN LISTS units)
      set(test ${name}/${unit})
      if(test IN_LIST registered)
        message(FATAL_ERROR "tau_add_python_suite(${name}): two modules hold ${unit}")
      endif()
      list(APPEND registered ${test})
      set(cost ${arg_COST})
      foreach(pair IN LISTS arg_COSTS)
        if(pair MATCHES "^${unit}=([0-9]+)$")
          set(cost ${CMAKE_MATCH_1})
        endif()
      endforeach()
      add_test(NAME ${test}
               COMMAND ${arg_PYTHON} ${TAU_RUN_SUITE} --units ${module}:${spec} ${module}.${unit}
               WORKING_DIRECTORY ${arg_WORKING_DIRECTORY})
      set_tests_properties(${test} PROPERTIES
          TIMEOUT ${arg_TIMEOUT}
          LABELS "${arg_LABELS}"
          PROCESSORS ${arg_PROCESSORS}
          COST ${cost}
          SKIP_RETURN_CODE ${TAU_SKIP_RETURN_CODE})
      if(arg_ENVIRONMENT)
        set_tests_properties(${test} PROPERTIES ENVIRONMENT "${arg_ENVIRONMENT}")
      endif()
    endforeach()
  endforeach()
endfunction()
