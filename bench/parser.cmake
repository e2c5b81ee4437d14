# bench_parser: link extraction MB/s and pages/s vs libxml2 DOM+XPath and a
# bare SAX parse (ceiling), plus peak memory for 1 MB vs 50 MB pages.
# Results: bench/parser.md.
add_executable(bench_parser ${CMAKE_CURRENT_LIST_DIR}/bench_parser.c)
target_link_libraries(bench_parser PRIVATE parser LibXml2::LibXml2 xmlheap)
