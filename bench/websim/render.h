/*
 * render.h -- HTTP responses of the synthetic web (render.c).
 */
#ifndef WEBSIM_RENDER_H
#define WEBSIM_RENDER_H

#include <stddef.h>

#include "model.h"

/* A growable byte buffer, always NUL-terminated past len. */
typedef struct ws_buf {
    char *p;
    size_t len, cap;
} ws_buf_t;

/* Appends; 0, or -1 out of memory (b unchanged). */
int ws_buf_put(ws_buf_t *b, const void *p, size_t n);
int ws_buf_printf(ws_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef struct ws_render ws_render_t;
#define WS_ACCEPT_GZIP 1
#define WS_ACCEPT_BR 2

/* The filler text of every charset, drawn from c->seed (c must outlive it);
 * NULL out of memory. */
ws_render_t *ws_render_open(const ws_cfg_t *c);
void ws_render_close(ws_render_t *r);
/* Appends the whole response to plan p (status line, headers, body unless
 * head_only) to out.  accept: WS_ACCEPT_* the request allows; keep: say
 * keep-alive (else close).  0, or -1 out of memory.  Not reentrant: a
 * renderer keeps its scratch buffers and deflate stream between calls. */
int ws_render(ws_render_t *r, const ws_plan_t *p, int accept, int head_only, int keep,
              ws_buf_t *out);

#endif
