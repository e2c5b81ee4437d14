# What `cmake --install` adds besides the targets' own rules (crawler/ and
# bloom/CMakeLists.txt: bin/crawler, lib/crawler/crawler_redis.so,
# share/man/man1/crawler.1.gz): the systemd unit template, and the CPack
# settings of the Debian package (`cpack -G DEB` in the build directory, or
# `cmake --build build --target package`).

install(CODE "set(CRAWLER_UNIT_IN \"${PROJECT_SOURCE_DIR}/contrib/systemd/crawler@.service.in\")
  set(CRAWLER_UNIT_TMP \"${PROJECT_BINARY_DIR}/unit\")
  set(CRAWLER_BINDIR \"${CMAKE_INSTALL_BINDIR}\")")
install(SCRIPT ${PROJECT_SOURCE_DIR}/cmake/install_unit.cmake)

# ---- Debian package: build/crawler_<version>_<arch>.deb ------------------------
# Depends: computed by dpkg-shlibdeps from the libraries the program and
# the module link (libcurl4, libhiredis0.14, libxml2, ... with their minimum
# versions), so it cannot drift from the build.  redis-server is a
# Recommends, not a Depends: only the embedded mode (no --redis, no
# REDIS_URL) runs it; a worker of a shared Redis or Redis Cluster does not
# need it, and installing it also starts a system-wide Redis service that such
# a machine should not get.  apt installs Recommends by default, so
# `apt-get install ./crawler_*.deb` gives a working embedded crawl.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME crawler)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "crawler maintainers <crawler@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "web crawler whose frontier and visited set live in Redis")
set(CPACK_PACKAGE_DESCRIPTION
  "A multi-threaded web crawler (libcurl, libxml2) that keeps its frontier and
its Bloom-filter visited set in Redis, so that worker processes on several
machines share one crawl through a shared Redis or Redis Cluster; or, alone,
through an embedded redis-server. Writes JSON lines and WARC/1.1 files.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION web)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "redis-server (>= 5:7.0)")
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
include(CPack)
