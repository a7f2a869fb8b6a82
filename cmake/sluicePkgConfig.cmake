# sluice.pc, from cmake/sluice.pc.in. Relocatable: the prefix is found from
# the file's own folder, ${pcfiledir}, so `cmake --install --prefix`
# anywhere gives a working file. The way up from that folder,
# <libdir>/pkgconfig, is as deep as the libdir: lib/x86_64-linux-gnu
# (Debian's multiarch, GNUInstallDirs' default under /usr there) needs one
# more ".." than lib or lib64. An absolute libdir or includedir is written
# as it is (such an install is not relocatable).
# In: CMAKE_INSTALL_LIBDIR, CMAKE_INSTALL_INCLUDEDIR, CMAKE_INSTALL_PREFIX,
# PROJECT_DESCRIPTION, PROJECT_VERSION; SLUICE_PC_OUT, the file to write.
file(RELATIVE_PATH SLUICE_PC_UP "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" SLUICE_PC_UP "${SLUICE_PC_UP}")
set(SLUICE_PC_PREFIX "\${pcfiledir}/${SLUICE_PC_UP}")
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(SLUICE_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(SLUICE_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(SLUICE_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/sluice.pc.in ${SLUICE_PC_OUT} @ONLY)
