/* placeholder: being written */
#include <stdio.h>
#include "cli.h"
int cmd_crawl(int argc, char **argv) { (void)argc; (void)argv; return CLI_EXIT_ERROR; }
