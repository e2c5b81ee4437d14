# cmake -DEXE=path/to/crawler -DOUT=path/to/crawler.1 -P man_page.cmake
# Writes the man page `crawler --man` prints to OUT, and OUT.gz (gzip -9n:
# no name or time stamp inside, so the package is reproducible).
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
