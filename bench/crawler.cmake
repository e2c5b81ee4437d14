# The crawl benchmark's helpers (bench/crawl_bench.sh drives them):
#   gen_site    writes a static site of N realistic HTML pages
#   bare_parse  CPU time of libxml2's bare SAX push parse (and of the parser
#               module) on the same pages: the per-page ceiling
add_executable(gen_site ${CMAKE_CURRENT_SOURCE_DIR}/gen_site.c)

add_executable(bare_parse ${CMAKE_CURRENT_SOURCE_DIR}/bare_parse.c)
target_link_libraries(bare_parse PRIVATE parser LibXml2::LibXml2)
