# text_extract: the text module's evaluation driver (bench/extract/README.md).
add_executable(text_extract ${CMAKE_CURRENT_LIST_DIR}/extract/text_extract.c)
target_link_libraries(text_extract PRIVATE text parser)
