# libFuzzer targets for parser/ and its text sink (text/) (included by tests/CMakeLists.txt when
# -DCRAWLER_FUZZ=ON).  Needs clang; tests/fuzz/run.sh builds and runs them
# under ASan+UBSan for a bounded time.
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "CRAWLER_FUZZ=ON needs clang: -DCMAKE_C_COMPILER=clang")
endif()
# coverage feedback from the library under test, not only from the harness
target_compile_options(parser PRIVATE -fsanitize=fuzzer-no-link)
# small tag caps, so that inputs of a few KB reach the capping paths
target_compile_definitions(parser PRIVATE BOUND_TAG_CAP=1024u BOUND_ATTR_MIN_CAP=256u)
target_compile_options(text PRIVATE -fsanitize=fuzzer-no-link)
foreach(t parser url)
  add_executable(fuzz_${t} ${CMAKE_CURRENT_LIST_DIR}/fuzz_${t}.c)
  target_link_libraries(fuzz_${t} PRIVATE parser)
  target_compile_options(fuzz_${t} PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_${t} PRIVATE -fsanitize=fuzzer)
endforeach()
target_link_libraries(fuzz_parser PRIVATE text) # the text sink's extractor
