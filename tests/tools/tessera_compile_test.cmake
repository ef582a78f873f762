# tessera-compile as a user sees it: the --json report and --json errors (parsed with
# string(JSON)), --dim names checked against the model's symbolic dims; and tessera-run's log line
# during a oneDNN Winograd load.
# Variables: TOOL, PYTHON, MODELS_SCRIPT (writes relu.onnx: x = float32[batch, 8], and conv.onnx),
# WORK_DIR, RUN_TOOL (tessera-run, or empty), ARCH (the target's CMAKE_SYSTEM_PROCESSOR).
file(MAKE_DIRECTORY ${WORK_DIR})
execute_process(COMMAND ${PYTHON} ${MODELS_SCRIPT} ${WORK_DIR} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${MODELS_SCRIPT} failed")
endif()
set(m ${WORK_DIR})

# run(NAME WANT_RC ARGS...): sets out, err.
function(run name want_rc)
  execute_process(COMMAND ${TOOL} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
  if(NOT rc EQUAL want_rc)
    message(FATAL_ERROR "${name}: exit ${rc}, want ${want_rc}\nstdout: ${stdout}\nstderr: ${stderr}")
  endif()
  set(out "${stdout}" PARENT_SCOPE)
  set(err "${stderr}" PARENT_SCOPE)
endfunction()

function(expect_contains name text pattern)
  string(FIND "${text}" "${pattern}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${name}: '${text}' lacks '${pattern}'")
  endif()
endfunction()

# json_get(VAR JSON PATH...): the value at PATH, failing the test if JSON does not parse or
# lacks it.
function(json_get var json)
  string(JSON value ERROR_VARIABLE error GET "${json}" ${ARGN})
  if(error)
    message(FATAL_ERROR "${ARGN}: ${error}\nin: ${json}")
  endif()
  set(${var} "${value}" PARENT_SCOPE)
endfunction()

# An error with --json: exit RC, the text on stderr and {"error": {"code", "message"}} alone on
# stdout, one line.
function(expect_json_error name want_rc code pattern)
  run(${name} ${want_rc} ${ARGN})
  expect_contains(${name} "${err}" "${pattern}")
  string(STRIP "${out}" line)
  string(FIND "${line}" "\n" newline)
  if(NOT newline EQUAL -1)
    message(FATAL_ERROR "${name}: stdout is not one line: ${out}")
  endif()
  string(JSON members LENGTH "${line}")
  json_get(got_code "${line}" error code)
  json_get(message "${line}" error message)
  if(NOT members EQUAL 1 OR NOT got_code STREQUAL code)
    message(FATAL_ERROR "${name}: want only error.code ${code}: ${out}")
  endif()
  expect_contains(${name} "${message}" "${pattern}")
  message(STATUS "${name}: ok")
endfunction()

# The report: one line, the keys the Python package, bench/ and tests/models read.
run(json_report 0 ${m}/relu.onnx -o ${m}/relu.tsr --dim batch=1:4 --json -q --backends portable)
string(STRIP "${out}" report)
string(FIND "${report}" "\n" newline)
if(NOT newline EQUAL -1)
  message(FATAL_ERROR "json_report: stdout is not one line: ${out}")
endif()
json_get(method "${report}" method)
json_get(symbol "${report}" symbols 0 name)
json_get(symbol_max "${report}" symbols 0 max)
json_get(relus "${report}" ops_by_backend portable Relu)
json_get(delegates "${report}" delegates)
foreach(key nodes passes kernel_instructions arena_bytes unplanned_bytes constants constants_bytes)
  json_get(value "${report}" ${key})
endforeach()
if(NOT method STREQUAL "forward" OR NOT symbol STREQUAL "batch" OR NOT symbol_max EQUAL 4 OR NOT relus EQUAL 1)
  message(FATAL_ERROR "json_report: unexpected report ${report}")
endif()
message(STATUS "json_report: ok")

expect_json_error(json_missing_file 1 NotFound "cannot open" ${m}/nonexistent.onnx -o ${m}/x.tsr --json)
expect_json_error(json_unknown_backend 1 NotFound "nosuchbackend" ${m}/relu.onnx -o ${m}/x.tsr --dim batch=1:2
                  --backends nosuchbackend --json)
expect_json_error(json_usage 2 UsageError "--no-such-flag" ${m}/relu.onnx -o ${m}/x.tsr --no-such-flag --json)
expect_json_error(json_no_output 2 UsageError "a model and -o OUT.tsr are required" ${m}/relu.onnx --json)

# A --dim name the model does not have is reported as such, naming the model's symbolic dims,
# even when (misspelt) it leaves a symbolic dim unbound.
expect_json_error(misspelt_dim 1 InvalidArgument
                  "--dim 'btach' names no symbolic dim of the model's inputs (its symbolic dims: 'batch'); did you mean 'batch'?"
                  ${m}/relu.onnx -o ${m}/x.tsr --dim btach=1:4 --json)
run(unknown_dim 1 ${m}/relu.onnx -o ${m}/x.tsr --dim batch=1:4 --dim seq=1:8)
expect_contains(unknown_dim "${err}" "--dim 'seq' names no symbolic dim of the model's inputs (its symbolic dims: 'batch')\n")
message(STATUS "unknown_dim: ok")

# Without --backends, each delegate gets the first backend of the compiler's preference that takes
# it, and lists the others as candidates for selection: on x86 oneDNN, then XNNPACK; elsewhere
# XNNPACK first.
execute_process(COMMAND ${TOOL} --list-backends OUTPUT_VARIABLE listed)
if(listed MATCHES "onednn" AND listed MATCHES "xnnpack")
  run(default_preference 0 ${m}/conv.onnx -o ${m}/conv_default.tsr --json -q)
  json_get(backend "${out}" delegates 0 backend)
  json_get(first "${out}" delegates 0 candidates 0)
  json_get(second "${out}" delegates 0 candidates 1)
  if(ARCH MATCHES "^(x86_64|AMD64|i[3-6]86)$")
    set(want onednn)
    set(other xnnpack)
  else()
    set(want xnnpack)
    set(other onednn)
  endif()
  if(NOT backend STREQUAL want OR NOT first STREQUAL want OR NOT second STREQUAL other)
    message(FATAL_ERROR "default_preference: on ${ARCH} want ${want}, then ${other}: ${out}")
  endif()
  message(STATUS "default_preference: ok (${ARCH}: ${want}, then ${other})")
else()
  message(STATUS "default_preference: skipped (needs both onednn and xnnpack)")
endif()

# A load step that can take seconds says so and where its result is cached: oneDNN's Winograd
# weight transform (skipped without the oneDNN backend or its Winograd kernels, avx512_core).
execute_process(COMMAND ${TOOL} --list-backends OUTPUT_VARIABLE backends)
if(NOT RUN_TOOL OR NOT backends MATCHES "onednn")
  message(STATUS "winograd_log: skipped (no tessera-run or no onednn backend)")
  return()
endif()
run(conv_compile 0 ${m}/conv.onnx -o ${m}/conv.tsr --backends onednn -q)
set(cache ${m}/onednn_cache)
file(REMOVE_RECURSE ${cache})
set(run_args ${m}/conv.tsr --option onednn.conv_algorithm=winograd --option onednn.cache_dir=${cache})
execute_process(COMMAND ${RUN_TOOL} ${run_args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 AND err MATCHES "needs oneDNN's float32 Winograd kernels")
  message(STATUS "winograd_log: skipped (no Winograd kernels on this CPU)")
  return()
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "winograd_log: exit ${rc}\nstderr: ${err}")
endif()
expect_contains(winograd_log "${err}"
                "tessera [info] onednn: transforming 3x3 convolution weights to the Winograd layout")
expect_contains(winograd_log "${err}" "; cached in '${cache}'")
execute_process(COMMAND ${RUN_TOOL} ${run_args} RESULT_VARIABLE rc ERROR_VARIABLE err)
string(FIND "${err}" "Winograd layout" at)
if(NOT rc EQUAL 0 OR NOT at EQUAL -1)
  message(FATAL_ERROR "winograd_log: the cached load (exit ${rc}) must be quiet: ${err}")
endif()
message(STATUS "winograd_log: ok")
