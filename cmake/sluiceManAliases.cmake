# One alias page per name in each man page's NAME section (every public
# function, and the few macros named there), so that `man 3 sl_chan_send`
# opens sluice_chan(3). Each alias is a one-line `.so man3/<page>.3`, written
# at configure time into the build tree and installed beside the pages.
# Configuring again after a NAME section changes is automatic.
file(GLOB sluice_man_pages CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/man/man3/*.3)
set(sluice_man_alias_dir ${PROJECT_BINARY_DIR}/man-aliases/man3)
file(REMOVE_RECURSE ${sluice_man_alias_dir})  # no alias outlives its name
file(MAKE_DIRECTORY ${sluice_man_alias_dir})
foreach(page ${sluice_man_pages})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${page})
  get_filename_component(page_file ${page} NAME)
  string(REGEX REPLACE "\\.3$" "" page_name ${page_file})
  file(READ ${page} text)
  # The names are what the NAME section lists before its "\-".
  string(FIND "${text}" "\n.SH NAME\n" start)
  if(start EQUAL -1)
    message(FATAL_ERROR "${page_file}: no NAME section")
  endif()
  string(SUBSTRING "${text}" ${start} -1 text)
  string(FIND "${text}" "\\-" dash)
  if(dash EQUAL -1)
    message(FATAL_ERROR "${page_file}: the NAME section has no \\-")
  endif()
  math(EXPR length "${dash} - 10")  # 10: the length of "\n.SH NAME\n"
  string(SUBSTRING "${text}" 10 ${length} names)
  string(REGEX MATCHALL "[A-Za-z_][A-Za-z0-9_]*" names "${names}")
  foreach(name ${names})
    if(NOT name STREQUAL page_name)
      file(WRITE ${sluice_man_alias_dir}/${name}.3 ".so man3/${page_file}\n")
    endif()
  endforeach()
endforeach()
install(DIRECTORY ${sluice_man_alias_dir} DESTINATION ${CMAKE_INSTALL_MANDIR})
