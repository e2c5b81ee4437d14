/*
 * test_link.c -- the one owner of a thread's Redis connections (rconn/link.c)
 * against a real redis-server: pipelined calls answered in order, a call
 * freed in flight, the Functions library loaded again when Redis lost it,
 * a loss that fails what may not run twice and sends again what may, a
 * reply saying a call did not run (OOM), a held connect, the reason of a
 * failed connect in Redis's own words, and a Redis that never answers.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errors.h"
#include "fixtures.h"
#include "rconn.h"

typedef struct env {
    fx_redis_t *srv;
    rconn_t *r;
    rconn_link_t *l;
    redisContext *c; /* the test's own connection, to look and to meddle */
} env_t;

static void env_start(env_t *e)
{
    e->srv = fx_redis_start();
    cr_assert_not_null(e->srv, "cannot start redis-server: %s", fx_error());
    char err[512] = "";
    e->r = rconn_open_url(fx_redis_url(e->srv), NULL, NULL, err, sizeof err);
    cr_assert_not_null(e->r, "%s", err);
    e->l = rconn_link_new(e->r);
    cr_assert_not_null(e->l);
    cr_assert_eq(rconn_link_connect(e->l, 0), 0, "%s", rconn_link_error(e->l));
    e->c = fx_redis_connect(e->srv);
    cr_assert_not_null(e->c);
}

static void env_stop(env_t *e)
{
    rconn_link_free(e->l);
    rconn_close(e->r);
    redisFree(e->c);
    fx_redis_stop(e->srv);
}

/* A call of argc string arguments. */
static rconn_call_t *cmd(unsigned flags, int argc, const char *const *argv)
{
    rconn_call_t *c = rconn_call_new(0, flags);
    cr_assert_not_null(c);
    for (int i = 0; i < argc; i++)
        rconn_arg_cstr(rconn_call_args(c), argv[i]);
    return c;
}

static long long reply_int(const rconn_call_t *c)
{
    redisReply *r = rconn_call_reply(c);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "not an integer reply");
    return r->integer;
}

static long long get_int(redisContext *c, const char *key)
{
    redisReply *r = redisCommand(c, "GET %s", key);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
    freeReplyObject(r);
    return v;
}

/* The link's connection killed by the server (CLIENT KILL TYPE normal
 * SKIPME yes: every client but the test's own). */
static void kill_clients(env_t *e)
{
    redisReply *r = redisCommand(e->c, "CLIENT KILL TYPE normal SKIPME yes");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer >= 1, "CLIENT KILL");
    freeReplyObject(r);
}

Test(link, pipelined_calls_are_answered_in_order)
{
    env_t e;
    env_start(&e);
    rconn_call_t *c[100];
    uint64_t before = rconn_link_round_trips(e.l);
    rconn_link_cork(e.l);
    for (int i = 0; i < 100; i++) {
        c[i] = cmd(0, 2, (const char *[]){"INCR", "k"});
        cr_assert_eq(rconn_link_send(e.l, c[i]), 0);
    }
    cr_expect_eq(rconn_link_round_trips(e.l), before, "written before the uncork");
    rconn_link_uncork(e.l);
    cr_expect_eq(rconn_link_round_trips(e.l) - before, 1, "a corked pipeline in one write");
    cr_assert_eq(rconn_link_wait(e.l, c[99]), 0, "%s", rconn_link_error(e.l));
    for (int i = 0; i < 100; i++) {
        cr_expect(rconn_call_done(c[i]), "call %d not done when a later one is", i);
        cr_expect_eq(reply_int(c[i]), i + 1, "call %d answered out of order", i);
        rconn_call_free(c[i]);
    }
    cr_expect_eq(rconn_link_pending(e.l), 0);
    env_stop(&e);
}

Test(link, a_call_freed_in_flight_has_its_reply_dropped)
{
    env_t e;
    env_start(&e);
    rconn_call_t *a = cmd(0, 2, (const char *[]){"INCR", "k"});
    rconn_call_t *b = cmd(0, 2, (const char *[]){"INCR", "k"});
    rconn_link_send(e.l, a);
    rconn_link_send(e.l, b);
    rconn_call_free(a); /* in flight: its place keeps the replies in step */
    cr_assert_eq(rconn_link_wait(e.l, b), 0, "%s", rconn_link_error(e.l));
    cr_expect_eq(reply_int(b), 2, "b got a's reply");
    rconn_call_free(b);
    cr_expect_eq(rconn_link_pending(e.l), 0);
    env_stop(&e);
}

#define LIB                                                                                        \
    "#!lua name=linktest\nredis.register_function('lt_incr', function(k) "                         \
    "return redis.call('INCR', k[1]) end)"

Test(link, a_lost_library_is_loaded_again_and_the_call_sent_again)
{
    env_t e;
    env_start(&e);
    cr_assert_eq(rconn_link_set_library(e.l, LIB), 0, "%s", rconn_link_error(e.l));
    const char *fc[] = {"FCALL", "lt_incr", "1", "k"};
    rconn_call_t *a = cmd(0, 4, fc);
    rconn_link_send(e.l, a);
    cr_assert_eq(rconn_link_wait(e.l, a), 0);
    cr_expect_eq(reply_int(a), 1);
    freeReplyObject(redisCommand(e.c, "FUNCTION FLUSH"));
    rconn_call_t *b = cmd(0, 4, fc), *d = cmd(0, 4, fc);
    rconn_link_send(e.l, b);
    rconn_link_send(e.l, d);
    cr_assert_eq(rconn_link_wait(e.l, d), 0, "%s", rconn_link_error(e.l));
    cr_expect_eq(reply_int(b), 2, "the call that met no function was not sent again");
    cr_expect_eq(reply_int(d), 3);
    rconn_call_free(a);
    rconn_call_free(b);
    rconn_call_free(d);
    env_stop(&e);
}

/* A connection lost with calls in flight (the server killed while they
 * wait in its socket, restarted empty): the one that may run twice is sent
 * again on the next connect, the other fails; a call handed over while
 * down goes out after the connect. */
Test(link, a_loss_fails_what_may_not_run_twice_and_sends_again_what_may)
{
    env_t e;
    env_start(&e);
    rconn_call_t *once = cmd(0, 2, (const char *[]){"INCR", "once"});
    rconn_call_t *twice = cmd(RCONN_CALL_RESEND, 2, (const char *[]){"INCR", "twice"});
    kill(fx_redis_pid(e.srv), SIGSTOP); /* the calls wait, unread, in its socket */
    rconn_link_send(e.l, once);
    rconn_link_send(e.l, twice);
    cr_assert_eq(fx_redis_restart(e.srv, SIGKILL, 0), 0, "%s", fx_error());
    cr_assert_eq(rconn_link_wait(e.l, twice), CRAWL_EREDIS, "the loss not seen");
    cr_expect_eq(rconn_link_up(e.l), 0);
    cr_expect(strlen(rconn_link_error(e.l)) > 0, "no reason kept");
    cr_expect(rconn_call_done(once) && rconn_call_status(once) == CRAWL_EREDIS,
              "a call that may not run twice was kept");
    cr_expect(!rconn_call_done(twice), "a call that may run twice was failed");
    rconn_call_t *later = cmd(0, 2, (const char *[]){"INCR", "later"});
    rconn_link_send(e.l, later); /* down: queued */
    cr_expect(!rconn_call_done(later));
    cr_assert_eq(rconn_link_connect(e.l, 0), 0, "%s", rconn_link_error(e.l));
    cr_assert_eq(rconn_link_wait(e.l, later), 0);
    cr_expect(rconn_call_done(twice) && rconn_call_status(twice) == 0, "not sent again");
    redisFree(e.c);
    e.c = fx_redis_connect(e.srv);
    cr_expect_eq(get_int(e.c, "twice"), 1, "sent again to the new server");
    cr_expect_eq(get_int(e.c, "once"), -1, "a call that may not run twice ran");
    cr_expect_eq(get_int(e.c, "later"), 1);
    rconn_call_free(once);
    rconn_call_free(twice);
    rconn_call_free(later);
    env_stop(&e);
}

/* Redis at its maxmemory refuses a write (OOM) without running it: the
 * link goes down saying so, keeps the call whatever its flags, and sends
 * it once a connect finds room. */
Test(link, a_call_redis_did_not_run_is_kept_and_the_reason_said)
{
    env_t e;
    env_start(&e);
    freeReplyObject(redisCommand(e.c, "CONFIG SET maxmemory-policy noeviction"));
    freeReplyObject(redisCommand(e.c, "CONFIG SET maxmemory 1"));
    rconn_call_t *w = cmd(0, 3, (const char *[]){"SET", "k", "v"});
    rconn_link_send(e.l, w);
    cr_assert_eq(rconn_link_wait(e.l, w), CRAWL_EREDIS);
    cr_expect(strstr(rconn_link_error(e.l), "OOM"), "the reason: '%s'", rconn_link_error(e.l));
    cr_expect(!rconn_call_done(w), "a call that did not run was failed");
    freeReplyObject(redisCommand(e.c, "CONFIG SET maxmemory 0"));
    cr_assert_eq(rconn_link_connect(e.l, 0), 0, "%s", rconn_link_error(e.l));
    cr_assert_eq(rconn_link_wait(e.l, w), 0);
    cr_expect_eq(rconn_call_status(w), 0);
    redisReply *r = redisCommand(e.c, "GET k");
    cr_expect(r && r->type == REDIS_REPLY_STRING && !strcmp(r->str, "v"));
    freeReplyObject(r);
    rconn_call_free(w);
    env_stop(&e);
}

/* A held connect: the calls kept go out only after resume, those sent
 * after the connect at once. */
Test(link, a_held_connect_sends_the_kept_calls_after_resume)
{
    env_t e;
    env_start(&e);
    rconn_link_drop(e.l, "the test");
    cr_expect_str_eq(rconn_link_error(e.l), "the test");
    rconn_call_t *kept = cmd(0, 3, (const char *[]){"SET", "order", "kept"});
    rconn_link_send(e.l, kept);
    cr_assert_eq(rconn_link_connect(e.l, 1), 0, "%s", rconn_link_error(e.l));
    rconn_call_t *first = cmd(0, 3, (const char *[]){"SET", "order", "first"});
    rconn_link_send(e.l, first);
    cr_assert_eq(rconn_link_wait(e.l, first), 0);
    cr_expect(!rconn_call_done(kept), "a held call went out before resume");
    rconn_link_resume(e.l);
    cr_assert_eq(rconn_link_wait(e.l, kept), 0);
    redisReply *r = redisCommand(e.c, "GET order");
    cr_expect(r && r->type == REDIS_REPLY_STRING && !strcmp(r->str, "kept"), "kept ran first");
    freeReplyObject(r);
    rconn_call_free(kept);
    rconn_call_free(first);
    env_stop(&e);
}

/* A password set behind the link's back: its next connect fails with
 * Redis's own words, not "connection lost". */
Test(link, a_failed_connect_says_what_redis_answered)
{
    env_t e;
    env_start(&e);
    freeReplyObject(redisCommand(e.c, "CONFIG SET requirepass sesame"));
    freeReplyObject(redisCommand(e.c, "AUTH sesame"));
    kill_clients(&e);
    rconn_call_t *a = cmd(RCONN_CALL_RESEND, 1, (const char *[]){"PING"});
    rconn_link_send(e.l, a);
    cr_expect_eq(rconn_link_wait(e.l, a), CRAWL_EREDIS);
    cr_expect_eq(rconn_link_connect(e.l, 0), CRAWL_EREDIS, "connected without the password");
    cr_expect(strstr(rconn_link_error(e.l), "NOAUTH"), "the reason: '%s'", rconn_link_error(e.l));
    freeReplyObject(redisCommand(e.c, "CONFIG SET requirepass \"\""));
    rconn_call_free(a);
    env_stop(&e);
}

/* A Redis that accepts connections and never answers (stopped): the call
 * waits RCONN_COMMAND_TIMEOUT_MS, then the link is down saying so.  The
 * verdict is the reason, not the time. */
Test(link, a_redis_that_never_answers_is_named_as_such, .timeout = 120)
{
    env_t e;
    env_start(&e);
    rconn_call_t *a = cmd(0, 1, (const char *[]){"PING"});
    kill(fx_redis_pid(e.srv), SIGSTOP);
    rconn_link_send(e.l, a);
    int rc = rconn_link_wait(e.l, a);
    kill(fx_redis_pid(e.srv), SIGCONT);
    cr_expect_eq(rc, CRAWL_EREDIS);
    cr_expect(strstr(rconn_link_error(e.l), "does not answer"), "the reason: '%s'",
              rconn_link_error(e.l));
    rconn_call_free(a);
    env_stop(&e);
}

/* The blocking context of a slot's server is handed out once the calls in
 * flight on it are answered. */
Test(link, the_context_is_lent_once_the_calls_in_flight_are_answered)
{
    env_t e;
    env_start(&e);
    rconn_call_t *a = cmd(0, 2, (const char *[]){"INCR", "k"});
    rconn_link_send(e.l, a);
    redisContext *ctx = rconn_link_context(e.l, 0);
    cr_assert_not_null(ctx, "%s", rconn_link_error(e.l));
    cr_expect(rconn_call_done(a), "lent with a call in flight");
    cr_expect_eq(get_int(ctx, "k"), 1);
    rconn_call_free(a);
    env_stop(&e);
}
