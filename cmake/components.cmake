# The package's components: Tessera::runtime (libtessera) and Tessera::<backend> for each backend
# built into it. Included right after tessera/ so that tools, tests and examples can use the
# names an installed package gives (cmake/TesseraConfig.cmake.in).
# The backends compiled into libtessera: portable always, the others when their folder found
# its dependency (it sets the global property TESSERA_HAVE_<NAME>).
set(TESSERA_BUILT_BACKENDS portable)
file(GLOB _tessera_backend_dirs LIST_DIRECTORIES true RELATIVE ${CMAKE_SOURCE_DIR}/tessera/backends
     ${CMAKE_SOURCE_DIR}/tessera/backends/*)
list(SORT _tessera_backend_dirs)
foreach(_backend IN LISTS _tessera_backend_dirs)
  string(TOUPPER "${_backend}" _upper)
  get_property(_have GLOBAL PROPERTY TESSERA_HAVE_${_upper})
  if(_have)
    list(APPEND TESSERA_BUILT_BACKENDS ${_backend})
  endif()
endforeach()
list(JOIN TESSERA_BUILT_BACKENDS ", " TESSERA_BUILT_BACKENDS_TEXT)
message(STATUS "Tessera package components: runtime, ${TESSERA_BUILT_BACKENDS_TEXT}")

# The same target names inside this build as from the installed package, so examples/ builds
# either way.
add_library(Tessera::runtime ALIAS tessera)
foreach(_backend IN LISTS TESSERA_BUILT_BACKENDS)
  add_library(tessera_component_${_backend} INTERFACE)
  target_link_libraries(tessera_component_${_backend} INTERFACE tessera)
  add_library(Tessera::${_backend} ALIAS tessera_component_${_backend})
endforeach()

