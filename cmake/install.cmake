# What `cmake --install` puts under the prefix: the public headers, libtessera and one
# libtessera_<backend> per backend library (versioned SONAME), the tools, docs/, the CMake package (TesseraConfig.cmake, exported targets) and
# pkg-config files. Included at the end of the top-level CMakeLists.txt, once every target exists
# (after cmake/components.cmake).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# libtessera.so -> libtessera.so.0.2 (the SONAME: 0.x releases break the ABI at each minor
# version) -> libtessera.so.0.2.0.
# The backend libraries get the same versions (cmake/backends.cmake).
set_target_properties(tessera_runtime PROPERTIES
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
target_include_directories(tessera_runtime INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(tessera_runtime PUBLIC cxx_std_20)

# Public headers: everything an application or a backend author includes. Left out: headers
# that need the generated FlatBuffers code or another library (ir/, kernels/, compiler/,
# backends/, backend/graph_payload.h, backend/payload_graph.h), the registry's internals and
# core/sanitizers.h (how Tessera's own sources tell a sanitizer build).
file(GLOB _tessera_public_headers RELATIVE ${CMAKE_SOURCE_DIR}
     ${CMAKE_SOURCE_DIR}/tessera/core/*.h ${CMAKE_SOURCE_DIR}/tessera/backend/*.h)
list(REMOVE_ITEM _tessera_public_headers tessera/backend/graph_payload.h
     tessera/backend/payload_graph.h tessera/backend/backend_entry.h tessera/backend/device_probe.h
     tessera/core/sanitizers.h)
list(APPEND _tessera_public_headers
     tessera/runtime/data_loader.h tessera/runtime/delegate_info.h tessera/runtime/load_options.h
     tessera/runtime/method.h tessera/runtime/on_execute_failure.h tessera/runtime/program.h
     tessera/c/tessera.h)
foreach(_header IN LISTS _tessera_public_headers)
  get_filename_component(_dir ${_header} DIRECTORY)
  install(FILES ${CMAKE_SOURCE_DIR}/${_header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${_dir})
endforeach()
set_property(GLOBAL PROPERTY TESSERA_PUBLIC_HEADERS ${_tessera_public_headers})

# Exported as Tessera::runtime and Tessera::<backend> (the component targets, which link the
# library so that its registrar runs: cmake/backends.cmake) and Tessera::<name>_library.
set(_tessera_install_targets tessera_runtime tessera_runtime_component tessera_portable_component)
foreach(_backend IN LISTS TESSERA_BACKEND_LIBRARIES)
  list(APPEND _tessera_install_targets tessera_${_backend} tessera_${_backend}_component)
endforeach()
install(TARGETS ${_tessera_install_targets} EXPORT TesseraTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT TesseraTargets NAMESPACE Tessera::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/TesseraConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/package/TesseraConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)
# 0.x: a minor version may break the API, so 0.2 accepts 0.2.* only.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/TesseraConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/TesseraConfig.cmake
              ${CMAKE_BINARY_DIR}/package/TesseraConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)

# pkg-config: tessera.pc, and tessera-<backend>.pc (requiring tessera) per built backend. The
# prefix is found from the file's own place, so `cmake --install --prefix P` relocates it.
file(RELATIVE_PATH TESSERA_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${CMAKE_SOURCE_DIR}/cmake/tessera.pc.in ${CMAKE_BINARY_DIR}/package/tessera.pc @ONLY)
set(_tessera_pc_files ${CMAKE_BINARY_DIR}/package/tessera.pc)
foreach(TESSERA_PC_BACKEND IN LISTS TESSERA_BUILT_BACKENDS)
  # The portable backend is part of libtessera. A backend library is linked with --no-as-needed:
  # the program calls none of its functions, it is there for its registrar (docs/usage.md).
  if(TESSERA_PC_BACKEND STREQUAL "portable")
    set(TESSERA_PC_LIBS "")
    set(TESSERA_PC_DESCRIPTION "part of libtessera")
  else()
    set(TESSERA_PC_LIBS "Libs: -L\${libdir} -Wl,--no-as-needed -ltessera_${TESSERA_PC_BACKEND}")
    set(TESSERA_PC_DESCRIPTION "libtessera_${TESSERA_PC_BACKEND}")
  endif()
  configure_file(${CMAKE_SOURCE_DIR}/cmake/tessera-backend.pc.in
                 ${CMAKE_BINARY_DIR}/package/tessera-${TESSERA_PC_BACKEND}.pc @ONLY)
  list(APPEND _tessera_pc_files ${CMAKE_BINARY_DIR}/package/tessera-${TESSERA_PC_BACKEND}.pc)
endforeach()
install(FILES ${_tessera_pc_files} DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The tools find libtessera and the backend libraries next to them: <prefix>/bin/../lib.
foreach(_tool tessera-run tessera-compile)
  if(TARGET ${_tool})
    set_target_properties(${_tool} PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
    install(TARGETS ${_tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
