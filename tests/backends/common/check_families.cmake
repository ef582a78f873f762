# Fails when the conformance families the executable EXE instantiates differ from FAMILIES (the
# list in tests/backends/CMakeLists.txt that gives each family its ctest), so that no family is
# left without a ctest.
execute_process(COMMAND ${EXE} --gtest_list_tests --gtest_filter=Conformance/*
                OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --gtest_list_tests failed (${rc})")
endif()
string(REGEX MATCHALL "Conformance/[A-Za-z]+\\." suites "${listing}")
set(found)
foreach(s IN LISTS suites)
  string(REGEX REPLACE "Conformance/([A-Za-z]+)\\." "\\1" name "${s}")
  list(APPEND found ${name})
endforeach()
list(REMOVE_DUPLICATES found)
list(SORT found)
set(expected ${FAMILIES})
list(SORT expected)
if(NOT found STREQUAL expected)
  message(FATAL_ERROR "conformance families: the executable has [${found}], "
                      "tests/backends/CMakeLists.txt lists [${expected}]")
endif()
