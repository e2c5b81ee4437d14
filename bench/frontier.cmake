# bench_frontier: frontier throughput and round trips per page (starts its own redis-server).
add_executable(bench_frontier ${CMAKE_CURRENT_LIST_DIR}/bench_frontier.c)
target_link_libraries(bench_frontier PRIVATE frontier bloom PkgConfig::HIREDIS testsupport)
add_dependencies(bench_frontier crawler_redis)
target_compile_definitions(bench_frontier PRIVATE CRAWLER_REDIS_MODULE="$<TARGET_FILE:crawler_redis>")
