# The package's components: Tessera::runtime (libtessera) and Tessera::<backend> for each backend
# library that was built (cmake/backends.cmake). Included right after tessera/ so that tools,
# tests and examples can use the names an installed package gives (cmake/TesseraConfig.cmake.in).

# Tessera::runtime: libtessera, linked plainly, also as a static archive: the registry calls a
# function beside the portable backend's registrar (detail::portable_backend_linked), so the
# linker keeps that object without the archive being linked whole. (A whole archive here would
# make CMake refuse every program that also links tessera_runtime directly, as the backend
# libraries and the tests do.)
add_library(tessera_runtime_component INTERFACE)
target_link_libraries(tessera_runtime_component INTERFACE tessera_runtime)
set_target_properties(tessera_runtime_component PROPERTIES EXPORT_NAME runtime)
add_library(Tessera::runtime ALIAS tessera_runtime_component)
set_target_properties(tessera_runtime PROPERTIES EXPORT_NAME runtime_library)
# Tessera::portable: the portable backend is part of libtessera.
add_library(tessera_portable_component INTERFACE)
target_link_libraries(tessera_portable_component INTERFACE tessera_runtime_component)
set_target_properties(tessera_portable_component PROPERTIES EXPORT_NAME portable)
add_library(Tessera::portable ALIAS tessera_portable_component)

# libtessera and the backend libraries: checked for undefined symbols, so that libtessera can never
# depend on a backend by accident (not under sanitizers, whose runtime the executable provides).
get_property(TESSERA_BACKEND_LIBRARIES GLOBAL PROPERTY TESSERA_BUILT_BACKEND_LIBRARIES)
if(BUILD_SHARED_LIBS AND NOT TESSERA_SANITIZE AND NOT TESSERA_FUZZ)
  foreach(_target tessera_runtime ${TESSERA_BACKEND_LIBRARIES})
    if(NOT _target STREQUAL "tessera_runtime")
      set(_target tessera_${_target})
    endif()
    target_link_options(${_target} PRIVATE "LINKER:--no-undefined")
  endforeach()
endif()

# Every backend there is: portable, then the libraries, in name order.
set(TESSERA_BUILT_BACKENDS portable ${TESSERA_BACKEND_LIBRARIES})
list(SORT TESSERA_BUILT_BACKENDS)
list(REMOVE_ITEM TESSERA_BUILT_BACKENDS portable)
list(PREPEND TESSERA_BUILT_BACKENDS portable)
list(JOIN TESSERA_BUILT_BACKENDS ", " TESSERA_BUILT_BACKENDS_TEXT)
message(STATUS "Tessera package components: runtime, ${TESSERA_BUILT_BACKENDS_TEXT}")
get_property(_left_out GLOBAL PROPERTY TESSERA_LEFT_OUT_BACKENDS)
if(_left_out)
  list(JOIN _left_out "; " _left_out)
  message(STATUS "Tessera backends left out: ${_left_out}")
else()
  message(STATUS "Tessera backends left out: none")
endif()

# `tessera` inside this build: libtessera with every backend library that was built.
add_library(tessera INTERFACE)
foreach(_backend IN LISTS TESSERA_BUILT_BACKENDS)
  target_link_libraries(tessera INTERFACE Tessera::${_backend})
endforeach()
target_link_libraries(tessera INTERFACE Tessera::runtime)
