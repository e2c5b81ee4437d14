# cmake -DEXE=path/to/crawler -DOUT=path/to/crawler.1 -P man_page.cmake
# Writes the man page `crawler --man` prints to OUT, and OUT.gz (gzip -9n:
# no name or time stamp inside, so the package is reproducible).
# The page's date: the last commit's (SOURCE_DATE_EPOCH, if not set already).
if(NOT DEFINED ENV{SOURCE_DATE_EPOCH})
  execute_process(COMMAND git -C ${CMAKE_CURRENT_LIST_DIR} log -1 --format=%ct
    OUTPUT_VARIABLE t OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE grc)
  if(grc EQUAL 0 AND t MATCHES "^[0-9]+$")
    set(ENV{SOURCE_DATE_EPOCH} ${t})
  endif()
endif()
execute_process(COMMAND ${EXE} --man OUTPUT_FILE ${OUT}.tmp RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE ${OUT}.tmp)
  message(FATAL_ERROR "${EXE} --man failed (${rc})")
endif()
file(RENAME ${OUT}.tmp ${OUT})
execute_process(COMMAND gzip -9nc ${OUT} OUTPUT_FILE ${OUT}.gz RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip ${OUT} failed (${rc})")
endif()
