# bench_bloom: the Bloom filter's batched test-and-add vs the alternatives,
# against a redis-server it starts itself.  Run: bench_bloom --out bench/bloom.md
add_executable(bench_bloom ${CMAKE_CURRENT_LIST_DIR}/bench_bloom.c)
target_link_libraries(bench_bloom PRIVATE bloom PkgConfig::HIREDIS ${MATH_LIB} testsupport)

# bench_bloom_grow: a visited set that grows against one filter sized in
# advance (memory, rate of the whole, test-and-add).  Run:
# bench_bloom_grow --out bench/bloom_grow.md
add_executable(bench_bloom_grow ${CMAKE_CURRENT_LIST_DIR}/bench_bloom_grow.c)
target_link_libraries(bench_bloom_grow PRIVATE bloom PkgConfig::HIREDIS ${MATH_LIB} testsupport)
