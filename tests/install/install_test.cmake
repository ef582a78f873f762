# cmake -P script run by ctest (tests/install/CMakeLists.txt): installs BUILD_DIR into
# WORK_DIR/prefix, checks what was installed, then builds examples/ against that prefix only:
# with find_package (CMake) and with pkg-config, and runs them.
cmake_minimum_required(VERSION 3.25)
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR MAKE_PROGRAM CXX CC GENERATOR VERSION BACKENDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_test.cmake: -D${var}=... is required")
  endif()
endforeach()
string(REPLACE "," ";" BACKENDS "${BACKENDS}")
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

# Runs a command; fails the test with its output unless it exits 0.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${ARGN}\n${out}\n${err}")
  endif()
  set(run_output "${out}${err}" PARENT_SCOPE)
endfunction()

function(expect_match what regex text)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: expected to match '${regex}', got:\n${text}")
  endif()
endfunction()

# 1. Install.
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _ "${VERSION}")
set(soversion ${CMAKE_MATCH_1}.${CMAKE_MATCH_2})
set(expected
    include/tessera/c/tessera.h include/tessera/runtime/program.h
    include/tessera/runtime/method.h include/tessera/backend/options.h
    include/tessera/core/status.h
    lib/libtessera.so lib/libtessera.so.${soversion} lib/libtessera.so.${VERSION}
    lib/cmake/Tessera/TesseraConfig.cmake lib/cmake/Tessera/TesseraConfigVersion.cmake
    lib/cmake/Tessera/TesseraTargets.cmake lib/pkgconfig/tessera.pc
    bin/tessera-run share/doc/tessera/usage.md share/doc/tessera/options.md)
foreach(backend IN LISTS BACKENDS)
  list(APPEND expected lib/pkgconfig/tessera-${backend}.pc)
  if(NOT backend STREQUAL "portable")
    list(APPEND expected lib/libtessera_${backend}.so lib/libtessera_${backend}.so.${soversion}
         include/tessera/backend/backend_library.h)
  endif()
endforeach()
if(HAVE_COMPILE)
  list(APPEND expected bin/tessera-compile)
endif()
foreach(f IN LISTS expected)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${prefix}/${f}")
  endif()
endforeach()
foreach(f include/tessera/ir include/tessera/schema include/tessera/backends
          include/tessera/backend/graph_payload.h)
  if(EXISTS ${prefix}/${f})
    message(FATAL_ERROR "installed but internal (needs generated or third-party headers): ${f}")
  endif()
endforeach()
run("readelf" readelf -d ${prefix}/lib/libtessera.so.${VERSION})
expect_match("SONAME" "\\(SONAME\\)[^\n]*\\[libtessera\\.so\\.${soversion}\\]" "${run_output}")
# libtessera links no backend library, and each backend library only its own dependency.
if(run_output MATCHES "NEEDED[^\n]*(libtessera_|XNNPACK|dnnl|OpenCL|armnn|gomp)")
  message(FATAL_ERROR "libtessera depends on a backend or its dependency:\n${run_output}")
endif()
if("xnnpack" IN_LIST BACKENDS)
  run("readelf libtessera_xnnpack" readelf -d ${prefix}/lib/libtessera_xnnpack.so.${VERSION})
  expect_match("libtessera_xnnpack SONAME" "\\(SONAME\\)[^\n]*\\[libtessera_xnnpack\\.so\\.${soversion}\\]"
               "${run_output}")
  if(run_output MATCHES "NEEDED[^\n]*(dnnl|OpenCL|armnn|gomp)")
    message(FATAL_ERROR "libtessera_xnnpack depends on another backend's dependency:\n${run_output}")
  endif()
endif()
run("installed tessera-run --list-options" ${prefix}/bin/tessera-run --list-options)
expect_match("tessera-run --list-options" "portable" "${run_output}")

# The tools link libtessera only and load the backend libraries installed beside it.
foreach(tool tessera-run tessera-compile)
  if(NOT EXISTS ${prefix}/bin/${tool})
    continue()
  endif()
  run("readelf ${tool}" readelf -d ${prefix}/bin/${tool})
  expect_match("${tool} links libtessera" "NEEDED[^\n]*\\[libtessera\\.so\\.${soversion}\\]" "${run_output}")
  if(run_output MATCHES "NEEDED[^\n]*libtessera_")
    message(FATAL_ERROR "${tool} links a backend library:\n${run_output}")
  endif()
endforeach()
run("installed tessera-run --list-backends" ${prefix}/bin/tessera-run --list-backends)
set(listed "${run_output}")
foreach(backend IN LISTS BACKENDS)
  if(NOT backend STREQUAL "portable")
    expect_match("tessera-run --list-backends: ${backend}"
                 "\n${backend} +[^\n]*\\(${prefix}/lib/libtessera_${backend}\\.so\\)" "\n${listed}")
  endif()
endforeach()
# A copy of the install with one backend library left out and one that does not load: the tool
# runs with the others and says which backend is missing and why.
set(partial ${WORK_DIR}/partial)
file(MAKE_DIRECTORY ${partial}/bin ${partial}/lib)
file(COPY ${prefix}/bin/tessera-run DESTINATION ${partial}/bin)
file(GLOB libraries ${prefix}/lib/libtessera*.so*)
list(FILTER libraries EXCLUDE REGEX "libtessera_xnnpack")
file(COPY ${libraries} DESTINATION ${partial}/lib)
file(WRITE ${partial}/lib/libtessera_broken.so "not a shared library\n")
run("tessera-run of a partial install" ${partial}/bin/tessera-run --list-backends)
if(run_output MATCHES "\nxnnpack ")
  message(FATAL_ERROR "xnnpack listed though its library is not installed:\n${run_output}")
endif()
expect_match("a library that does not load"
             "tessera-run: warning: the broken backend is not available: backend library '[^']*' could not be loaded: "
             "${run_output}")
expect_match("portable" "\nportable +available \\(libtessera\\)" "\n${run_output}")

# 2. Every installed header compiles with only the prefix on the include path: no generated
# FlatBuffers header, no backend's headers. tessera.h also as strict C11.
file(GLOB_RECURSE headers RELATIVE ${prefix}/include ${prefix}/include/*.h)
set(all "")
foreach(h IN LISTS headers)
  string(APPEND all "#include \"${h}\"\n")
endforeach()
file(WRITE ${WORK_DIR}/all_headers.cpp "${all}int main() { return 0; }\n")
run("installed headers (C++20)" ${CXX} -std=c++20 -Wall -Wextra -Werror -fsyntax-only
    -I${prefix}/include ${WORK_DIR}/all_headers.cpp)
# System-wide third-party headers (FlatBuffers, XNNPACK, ...) would compile too: check that every
# include is a standard header or one of the installed ones.
foreach(h IN LISTS headers)
  file(STRINGS ${prefix}/include/${h} includes REGEX "^#include")
  foreach(line IN LISTS includes)
    if(line MATCHES "^#include <([a-z_]+|std[a-z]+\\.h)>$")
      continue()
    endif()
    if(line MATCHES "^#include \"(tessera/[a-z_/]+\\.h)\"$" AND EXISTS ${prefix}/include/${CMAKE_MATCH_1})
      continue()
    endif()
    message(FATAL_ERROR "${h}: '${line}' is neither a standard header nor an installed one")
  endforeach()
endforeach()
# The docs' C++ snippets (tests/docs) compile against the installed headers alone.
foreach(snippet snippets usage_example)
  run("docs snippets ${snippet}.cpp with the installed headers" ${CXX} -std=c++20 -Wall -Wextra
      -Werror -fsyntax-only -I${prefix}/include ${SOURCE_DIR}/tests/docs/${snippet}.cpp)
endforeach()
file(WRITE ${WORK_DIR}/c_header.c "#include \"tessera/c/tessera.h\"\nint main(void) { return 0; }\n")
run("tessera.h (C11)" ${CC} -std=c11 -Wall -Wextra -pedantic -Werror -fsyntax-only
    -I${prefix}/include ${WORK_DIR}/c_header.c)

# 3. Programs to run.
run("make_test_program" ${MAKE_PROGRAM} ${WORK_DIR}/add.tsr)

# 4. examples/ with find_package(Tessera 0.2 REQUIRED COMPONENTS xnnpack), from the prefix only.
if("xnnpack" IN_LIST BACKENDS)
  run("configure examples" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${WORK_DIR}/examples
      -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix}
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
  file(STRINGS ${WORK_DIR}/examples/CMakeCache.txt tessera_dir REGEX "^Tessera_DIR:")
  expect_match("Tessera_DIR" "=${prefix}/lib/cmake/Tessera$" "${tessera_dir}")
  run("build examples" ${CMAKE_COMMAND} --build ${WORK_DIR}/examples -j 2)
  run("examples: tessera_c_run" ${WORK_DIR}/examples/tessera_c_run ${WORK_DIR}/add.tsr --dim batch=2)
  expect_match("tessera_c_run" "output y: float32, 32 bytes: 0 0 0.75 0 0 1.5 1.25 0" "${run_output}")
  run("examples: classify" ${WORK_DIR}/examples/classify ${WORK_DIR}/add.tsr --iterations 1)
  expect_match("classify" "top-5: " "${run_output}")

  # classify links Tessera::runtime Tessera::xnnpack: no other backend library.
  run("readelf classify" readelf -d ${WORK_DIR}/examples/classify)
  expect_match("classify links libtessera_xnnpack" "NEEDED[^\n]*libtessera_xnnpack" "${run_output}")
  if(run_output MATCHES "NEEDED[^\n]*libtessera_(onednn|opencl|armnn)")
    message(FATAL_ERROR "classify links another backend library:\n${run_output}")
  endif()
endif()

# 5. The C example with pkg-config alone.
find_program(PKG_CONFIG pkg-config REQUIRED)
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
set(ENV{PKG_CONFIG_LIBDIR} ${prefix}/lib/pkgconfig)
list(GET BACKENDS -1 last_backend)
run("pkg-config" ${PKG_CONFIG} --cflags --libs tessera-${last_backend})
string(STRIP "${run_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
# pkg-config keeps the relocatable prefix unnormalised: .../lib/pkgconfig/../../include.
if(last_backend STREQUAL "portable")
  expect_match("pkg-config" "^-I${prefix}/[a-z/.]*include;-L${prefix}/[a-z/.]*lib;-ltessera$" "${flags}")
else()
  expect_match("pkg-config"
               "^-I${prefix}/[a-z/.]*include;-L${prefix}/[a-z/.]*lib;-Wl,--no-as-needed;-ltessera_${last_backend};-ltessera$"
               "${flags}")
endif()
run("cc with pkg-config" ${CC} -std=c11 ${SOURCE_DIR}/examples/c/run.c ${flags}
    -Wl,-rpath,${prefix}/lib -o ${WORK_DIR}/c_run_pkgconfig)
run("pkg-config build: tessera_c_run" ${WORK_DIR}/c_run_pkgconfig ${WORK_DIR}/add.tsr --dim batch=1)
expect_match("tessera_c_run (pkg-config)" "output y: float32, 16 bytes: 0 0 0.75 0\n" "${run_output}")

# 6. One backend only, with --as-needed first (the registrar must still run): exactly portable and
# that backend are registered. libtessera alone, with TESSERA_BACKEND_PATH=<prefix>/lib, loads
# every installed backend library at run time.
run("c++ with pkg-config, one backend" ${CXX} -std=c++20 -Wl,--as-needed
    ${SOURCE_DIR}/tests/backend/library/link_test.cpp ${flags} -Wl,-rpath,${prefix}/lib
    -o ${WORK_DIR}/one_backend)
set(one_backend portable ${last_backend})
list(REMOVE_DUPLICATES one_backend)
run("one backend registered" ${WORK_DIR}/one_backend ${one_backend})
run("pkg-config tessera" ${PKG_CONFIG} --cflags --libs tessera)
string(STRIP "${run_output}" runtime_flags)
separate_arguments(runtime_flags UNIX_COMMAND "${runtime_flags}")
run("c++ with pkg-config, libtessera only" ${CXX} -std=c++20
    ${SOURCE_DIR}/tests/backend/library/link_test.cpp ${runtime_flags} -Wl,-rpath,${prefix}/lib
    -o ${WORK_DIR}/runtime_only)
run("libtessera only: portable" ${WORK_DIR}/runtime_only portable)
set(sorted_backends ${BACKENDS})
list(SORT sorted_backends)
run("libtessera only, TESSERA_BACKEND_PATH" ${CMAKE_COMMAND} -E env TESSERA_BACKEND_PATH=${prefix}/lib
    ${WORK_DIR}/runtime_only ${sorted_backends})

# 7. A component that was not built, and a version this is not, fail find_package with a
# message saying what there is.
file(WRITE ${WORK_DIR}/missing/CMakeLists.txt
     "cmake_minimum_required(VERSION 3.25)\nproject(missing LANGUAGES CXX)\n"
     "find_package(Tessera 0.2 REQUIRED COMPONENTS runtime no_such_backend)\n")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK_DIR}/missing -B ${WORK_DIR}/missing/build
                -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "find_package(Tessera COMPONENTS no_such_backend) succeeded")
endif()
list(JOIN BACKENDS ", " built)
string(REGEX REPLACE "[ \n]+" " " err "${err}")
expect_match("missing component" "has no component no_such_backend: .* built with: ${built}" "${err}")
file(WRITE ${WORK_DIR}/newer/CMakeLists.txt
     "cmake_minimum_required(VERSION 3.25)\nproject(newer LANGUAGES CXX)\n"
     "find_package(Tessera 0.3 REQUIRED)\n")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK_DIR}/newer -B ${WORK_DIR}/newer/build
                -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "find_package(Tessera 0.3) accepted version ${VERSION}")
endif()
string(REGEX REPLACE "[ \n]+" " " err "${err}")
expect_match("version" "version: ${VERSION}" "${err}")
message(STATUS "install test: installed, headers self-contained, examples built and run against ${prefix}")
