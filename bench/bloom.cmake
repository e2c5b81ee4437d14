# bench_bloom: the Bloom filter's batched test-and-add vs the alternatives,
# against a redis-server it starts itself.  Run: bench_bloom --out bench/bloom.md
add_executable(bench_bloom ${CMAKE_CURRENT_LIST_DIR}/bench_bloom.c)
target_link_libraries(bench_bloom PRIVATE bloom PkgConfig::HIREDIS ${MATH_LIB} testsupport)
