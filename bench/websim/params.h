/*
 * params.h -- the web's parameters by name (params.c holds the table).
 */
#ifndef WEBSIM_PARAMS_H
#define WEBSIM_PARAMS_H

#include <stdio.h>

#include "model.h"

/* Sets the parameter called name (without "--") from its text; 0, -1 for a
 * bad value, -2 for an unknown name (err says which).  c unchanged on error. */
int ws_param_set(ws_cfg_t *c, const char *name, const char *value, char *err, size_t errcap);
/* Every parameter with its default and help, one a line (markdown: a table). */
void ws_params_print(FILE *f, int markdown);
/* c as a command line ("--seed 1 --hosts ..."): what a run records. */
int ws_params_write(FILE *f, const ws_cfg_t *c);

#endif
