# `cmake --install BUILD [--prefix P]`: the apps in bin/; the libraries, the
# headers under include/taihu/ and a CMake package, so that another project
# builds against taihu with
#
#   find_package(taihu REQUIRED)      # CMAKE_PREFIX_PATH=P
#   target_link_libraries(app PRIVATE taihu::core)   # or taihu::actors, ...
#
# and the shipped configs under share/taihu/config (tests/install checks all of it).
include(CMakePackageConfigHelpers)

set(TAIHU_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/taihu)
set(TAIHU_LIBRARIES taihu_collectives taihu_transport taihu_simulator taihu_sw26010 taihu_messages taihu_actors)
foreach(library ${TAIHU_LIBRARIES})
  string(REPLACE "taihu_" "" short ${library})
  set_target_properties(${library} PROPERTIES EXPORT_NAME ${short})
endforeach()
# Layers, solvers and readers register themselves by static objects, so the
# core archive is linked whole; taihu::core is that, for the package's users.
add_library(taihu_core_whole INTERFACE)
target_link_libraries(taihu_core_whole INTERFACE ${TAIHU_CORE_LINK})
set_target_properties(taihu_core PROPERTIES EXPORT_NAME core_archive)
set_target_properties(taihu_core_whole PROPERTIES EXPORT_NAME core)
list(APPEND TAIHU_LIBRARIES taihu_core taihu_core_whole)

install(TARGETS taihu-train taihu-node taihu-sim taihu-convert RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ${TAIHU_LIBRARIES} EXPORT taihuTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}/taihu
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/taihu)
foreach(folder core collectives transport simulator devices messages actors)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${folder} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/taihu
          FILES_MATCHING PATTERN "*.hpp")
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/config DESTINATION ${CMAKE_INSTALL_DATADIR}/taihu)

install(EXPORT taihuTargets NAMESPACE taihu:: DESTINATION ${TAIHU_PACKAGE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/taihuConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/taihuConfig.cmake INSTALL_DESTINATION ${TAIHU_PACKAGE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/taihuConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/taihuConfig.cmake ${PROJECT_BINARY_DIR}/taihuConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/TaihuDependencies.cmake
        DESTINATION ${TAIHU_PACKAGE_DIR})
