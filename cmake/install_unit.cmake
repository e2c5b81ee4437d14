# Run at install time (install(SCRIPT), cmake/install.cmake), when the
# prefix is known: `cmake --install build --prefix P` or cpack's /usr.
# Writes contrib/systemd/crawler@.service.in with ExecStart=<prefix>/bin/crawler:
# into lib/systemd/system when the prefix is /usr (where systemd reads
# packaged units, /usr/lib/systemd/system on Debian 12's merged /usr),
# else into share/doc/crawler/systemd (copy it to /etc/systemd/system:
# systemd does not look under other prefixes).
# Set by the install(CODE) before it: CRAWLER_UNIT_IN, CRAWLER_UNIT_TMP,
# CRAWLER_BINDIR.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(unit_dir lib/systemd/system)
else()
  set(unit_dir share/doc/crawler/systemd)
endif()
set(CRAWLER_EXEC "${CMAKE_INSTALL_PREFIX}/${CRAWLER_BINDIR}/crawler")
# one scratch directory per destination: two installs at once (a test's,
# cpack's) do not write each other's unit
string(MD5 dest_id "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")
configure_file(${CRAWLER_UNIT_IN} ${CRAWLER_UNIT_TMP}/${dest_id}/crawler@.service @ONLY)
file(INSTALL ${CRAWLER_UNIT_TMP}/${dest_id}/crawler@.service DESTINATION "${CMAKE_INSTALL_PREFIX}/${unit_dir}"
  FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
