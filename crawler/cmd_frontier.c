/* placeholder: being written */
#include <stdio.h>
#include "cli.h"
int cmd_seed(int argc, char **argv) { (void)argc; (void)argv; return CLI_EXIT_ERROR; }
int cmd_stats(int argc, char **argv) { (void)argc; (void)argv; return CLI_EXIT_ERROR; }
int cmd_reset(int argc, char **argv) { (void)argc; (void)argv; return CLI_EXIT_ERROR; }
