# One library per backend: libtessera_<name> links libtessera and the backend's own dependency
# only. Included by the top-level CMakeLists.txt before tessera/; each tessera/backends/<name>/
# folder calls these functions. How a linked backend library gets registered (and why the
# targets below carry a link option) is in docs/usage.md, "Linking backends".
#
#   -DTESSERA_BACKEND_<NAME>=AUTO (default): built when its dependency is found; the configure
#                                            summary says what was left out and why.
#                           =ON:   the configure fails when the dependency is missing.
#                           =OFF:  not built.

# Sets `out_var` to TRUE when backend `name` should be looked for, FALSE when it is OFF (and
# records why it was left out). Defines the TESSERA_BACKEND_<NAME> cache entry.
function(tessera_backend_wanted name out_var)
  string(TOUPPER "${name}" upper)
  set(TESSERA_BACKEND_${upper} AUTO CACHE STRING
      "Build the ${name} backend library: AUTO (when its dependency is found), ON (required) or OFF")
  set_property(CACHE TESSERA_BACKEND_${upper} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${TESSERA_BACKEND_${upper}}" mode)
  if(mode MATCHES "^(ON|YES|TRUE|1)$")
    set(mode ON)
  elseif(mode MATCHES "^(OFF|NO|FALSE|0)$")
    set(mode OFF)
  elseif(NOT mode STREQUAL "AUTO")
    message(FATAL_ERROR "TESSERA_BACKEND_${upper}='${TESSERA_BACKEND_${upper}}': use AUTO, ON or OFF")
  endif()
  set_property(GLOBAL PROPERTY TESSERA_BACKEND_MODE_${upper} ${mode})
  if(mode STREQUAL "OFF")
    set_property(GLOBAL APPEND PROPERTY TESSERA_LEFT_OUT_BACKENDS
                 "${name} (TESSERA_BACKEND_${upper}=OFF)")
    set(${out_var} FALSE PARENT_SCOPE)
  else()
    set(${out_var} TRUE PARENT_SCOPE)
  endif()
endfunction()

# Backend `name`'s dependency is missing: fails the configure when TESSERA_BACKEND_<NAME>=ON,
# otherwise records `reason` for the configure summary. The caller then return()s.
function(tessera_backend_missing name reason)
  string(TOUPPER "${name}" upper)
  get_property(mode GLOBAL PROPERTY TESSERA_BACKEND_MODE_${upper})
  if(mode STREQUAL "ON")
    message(FATAL_ERROR "TESSERA_BACKEND_${upper}=ON but ${reason}. Install what is missing, or configure with "
                        "-DTESSERA_BACKEND_${upper}=AUTO (or OFF) to build without the ${name} backend.")
  endif()
  set_property(GLOBAL APPEND PROPERTY TESSERA_LEFT_OUT_BACKENDS "${name} (${reason})")
endfunction()

# Creates the library target tessera_<name> (libtessera_<name>, shared or static as
# BUILD_SHARED_LIBS says) from `sources`, linked to libtessera, and the component target
# Tessera::<name> that applications and in-tree consumers link (tessera_backend_component).
function(tessera_add_backend_library name)
  add_library(tessera_${name} ${ARGN} ${CMAKE_SOURCE_DIR}/tessera/backend/backend_library_entry.cpp)
  target_link_libraries(tessera_${name} PUBLIC tessera_runtime)
  set_target_properties(tessera_${name} PROPERTIES
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
    EXPORT_NAME ${name}_library
    # Beside libtessera, so that TESSERA_BACKEND_PATH=<build dir> finds them all.
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}
    ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
  tessera_backend_component(${name} tessera_${name})
  set_property(GLOBAL APPEND PROPERTY TESSERA_BUILT_BACKEND_LIBRARIES ${name})
  string(TOUPPER "${name}" upper)
  set_property(GLOBAL PROPERTY TESSERA_HAVE_${upper} ON)
endfunction()

# The target to link for backend `name` whose library target is `library`: an INTERFACE target
# tessera_<name>_component (Tessera::<name>, exported as Tessera::<name>) that makes sure the
# library's static registrar runs in every program linking it:
# - shared library: the registrar runs when the library is loaded, so it must stay a dependency
#   of the program although the program calls none of its functions: --no-as-needed (toolchains
#   that pass --as-needed by default would drop it);
# - static library: the archive is linked whole, so the object holding the registrar, which
#   nothing references, is not left out.
function(tessera_backend_component name library)
  add_library(tessera_${name}_component INTERFACE)
  get_target_property(type ${library} TYPE)
  if(type STREQUAL "STATIC_LIBRARY")
    target_link_libraries(tessera_${name}_component INTERFACE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${library}>")
  else()
    target_link_libraries(tessera_${name}_component INTERFACE ${library})
    target_link_options(tessera_${name}_component INTERFACE "LINKER:--no-as-needed")
  endif()
  set_target_properties(tessera_${name}_component PROPERTIES EXPORT_NAME ${name})
  add_library(Tessera::${name} ALIAS tessera_${name}_component)
endfunction()
