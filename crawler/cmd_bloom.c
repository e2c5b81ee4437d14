/* placeholder: being written */
#include <stdio.h>
#include "cli.h"
int cmd_bloom(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "crawler bloom: not built yet\n"); return CLI_EXIT_ERROR; }
