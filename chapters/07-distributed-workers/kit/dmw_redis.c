/**
 * @file dmw_redis.c
 * @brief The connection to a run: URL, keys, one command at a time, and
 *        reconnection with bounded backoff when the connection is lost.
 *
 * DESIGN: a dmw_redis_t is one hiredis context and is used by one thread at
 * a time (hiredis contexts are not thread-safe; the heartbeat has its own).
 * A command that fails because the connection broke is sent again on a new
 * connection; see dmw_redis.h for why that is safe in this protocol. Every
 * read has a time limit (SO_RCVTIMEO), so a server that vanished without
 * closing the connection - a partition - is noticed, never waited on forever.
 */
#define _POSIX_C_SOURCE 200809L
#include "dmw_redis.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_errno.h"
#include "kit_log.h"
#include "kit_time.h"

enum { FIRST_PAUSE_MS = 20, MAX_PAUSE_MS = 1000 };

struct dmw_redis {
    /* Immutable after open: */
    dmw_config_t config;           /* defaults filled in; its strings point below */
    char url[256];
    char run[DMW_NAME_MAX];
    char host[128];
    int port;
    char password[128];
    int db;
    dmw_keys_t keys;
    /* Used by the owning thread only: */
    redisContext *context;         /* NULL while disconnected */
    long reply_timeout_ms;         /* what SO_RCVTIMEO is set to now */
    long reconnects;
    bool reconnected;              /* a reconnection not yet reported */
    char error[200];
};

/* ---- configuration --------------------------------------------------------- */

bool dmw_name_ok(const char *name)
{
    size_t length = name ? strlen(name) : 0;
    if (length == 0 || length >= DMW_NAME_MAX)
        return false;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '.' || *c == '_' || *c == '-'))
            return false;
    return true;
}

/* redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]; only the password of USER:PASSWORD is used. */
static int parse_url(dmw_redis_t *r, const char *url)
{
    const char *prefix = "redis://";
    if (strncmp(url, prefix, strlen(prefix)) != 0 || strlen(url) >= sizeof r->url)
        return EINVAL;
    snprintf(r->url, sizeof r->url, "%s", url);
    const char *rest = url + strlen(prefix);
    const char *at = strchr(rest, '@');
    if (at) {
        const char *colon = memchr(rest, ':', (size_t)(at - rest));
        const char *secret = colon ? colon + 1 : rest;
        snprintf(r->password, sizeof r->password, "%.*s", (int)(at - secret), secret);
        rest = at + 1;
    }
    size_t host_length = strcspn(rest, ":/");
    if (host_length == 0 || host_length >= sizeof r->host)
        return EINVAL;
    snprintf(r->host, sizeof r->host, "%.*s", (int)host_length, rest);
    rest += host_length;
    char *end = (char *)rest;
    r->port = 6379;
    if (*rest == ':')
        r->port = (int)strtol(rest + 1, &end, 10);
    if (*end == '/')
        r->db = (int)strtol(end + 1, &end, 10);
    return *end == '\0' && r->port > 0 && r->port < 65536 && r->db >= 0 ? 0 : EINVAL;
}

static int resolve_config(dmw_redis_t *r, const dmw_config_t *config)
{
    const char *url = config->redis_url ? config->redis_url : getenv("REDIS_URL");
    if (url == NULL || !dmw_name_ok(config->run) || config->visibility_ms < 0 || config->max_attempts < 0 ||
        config->connect_timeout_ms < 0 || config->reconnect_ms < 0 || parse_url(r, url) != 0)
        return EINVAL;
    snprintf(r->run, sizeof r->run, "%s", config->run);
    r->config = (dmw_config_t){
        .redis_url = r->url,
        .run = r->run,
        .visibility_ms = config->visibility_ms ? config->visibility_ms : 1000,
        .max_attempts = config->max_attempts ? config->max_attempts : 3,
        .connect_timeout_ms = config->connect_timeout_ms ? config->connect_timeout_ms : 1000,
        .reconnect_ms = config->reconnect_ms ? config->reconnect_ms : 5000,
    };
    return 0;
}

/* Every key of a run shares the hash tag {RUN}: on a Redis Cluster they all
 * live on one node, so the multi-key scripts stay legal there. */
static void make_keys(dmw_redis_t *r)
{
    dmw_keys_t *k = &r->keys;
    snprintf(k->queue, sizeof k->queue, "dmw:{%s}:queue", r->run);
    snprintf(k->dead, sizeof k->dead, "dmw:{%s}:dead", r->run);
    snprintf(k->outcomes, sizeof k->outcomes, "dmw:{%s}:outcomes", r->run);
    snprintf(k->tasks, sizeof k->tasks, "dmw:{%s}:tasks", r->run);
    snprintf(k->workers, sizeof k->workers, "dmw:{%s}:workers", r->run);
    snprintf(k->events, sizeof k->events, "dmw:{%s}:events", r->run);
    snprintf(k->shutdown, sizeof k->shutdown, "dmw:{%s}:shutdown", r->run);
    snprintf(k->retries, sizeof k->retries, "dmw:{%s}:retries", r->run);
}

static int worker_key(const dmw_redis_t *r, const char *what, const char *worker, char *key, size_t size)
{
    if (r == NULL || worker == NULL || key == NULL)
        return EINVAL;
    int n = snprintf(key, size, "dmw:{%s}:%s:%s", r->run, what, worker);
    return n >= 0 && (size_t)n < size ? 0 : ERANGE;
}

int dmw_key_processing(const dmw_redis_t *r, const char *worker, char *key, size_t size)
{
    return worker_key(r, "processing", worker, key, size);
}

int dmw_key_alive(const dmw_redis_t *r, const char *worker, char *key, size_t size)
{
    return worker_key(r, "alive", worker, key, size);
}

/* ---- connecting ------------------------------------------------------------ */

static struct timeval timeval_ms(long ms)
{
    return (struct timeval){ .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
}

/* hiredis keeps an error class and a text; the kit speaks errno. */
static int context_errno(const redisContext *c, int saved_errno)
{
    switch (c->err) {
    case REDIS_ERR_IO: return saved_errno ? saved_errno : EIO;
    case REDIS_ERR_EOF: return ECONNRESET;
    case REDIS_ERR_PROTOCOL: return EPROTO;
    case REDIS_ERR_OOM: return ENOMEM;
    default: return strstr(c->errstr, "resolve") || strstr(c->errstr, "known") ? EHOSTUNREACH : EIO;
    }
}

/* AUTH and SELECT on a fresh context; an error reply means a wrong password or db. */
static int prepare(dmw_redis_t *r, redisContext *c)
{
    redisReply *reply = NULL;
    if (r->password[0])
        reply = redisCommand(c, "AUTH %s", r->password);
    if (reply == NULL && r->password[0])
        return context_errno(c, errno);
    int err = reply && reply->type == REDIS_REPLY_ERROR ? EPERM : 0;
    if (reply)
        snprintf(r->error, sizeof r->error, "%s", reply->type == REDIS_REPLY_ERROR ? reply->str : "");
    freeReplyObject(reply);
    if (err == 0 && r->db != 0) {
        reply = redisCommand(c, "SELECT %d", r->db);
        err = reply == NULL ? context_errno(c, errno) : reply->type == REDIS_REPLY_ERROR ? EINVAL : 0;
        freeReplyObject(reply);
    }
    return err;
}

/* One attempt, no retries. */
static int connect_once(dmw_redis_t *r)
{
    errno = 0;
    redisContext *c = redisConnectWithTimeout(r->host, r->port, timeval_ms(r->config.connect_timeout_ms));
    int saved = errno;
    if (c == NULL)
        return ENOMEM;
    int err = c->err ? context_errno(c, saved) : prepare(r, c);
    if (err == 0)
        err = redisSetTimeout(c, timeval_ms(r->config.connect_timeout_ms)) == REDIS_OK ? 0 : EIO;
    if (err != 0) {
        if (c->err)
            snprintf(r->error, sizeof r->error, "%s", c->errstr);
        redisFree(c);
        return err;
    }
    r->context = c;
    r->reply_timeout_ms = r->config.connect_timeout_ms;
    return 0;
}

int dmw_redis_open(dmw_redis_t **out, const dmw_config_t *config)
{
    if (out)
        *out = NULL;
    if (out == NULL || config == NULL)
        return EINVAL;
    dmw_redis_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return ENOMEM;
    int err = resolve_config(r, config);
    if (err == 0) {
        make_keys(r);
        err = connect_once(r);
    }
    if (err != 0) {
        free(r);
        return err;
    }
    *out = r;
    return 0;
}

void dmw_redis_close(dmw_redis_t *r)
{
    if (r == NULL)
        return;
    if (r->context)
        redisFree(r->context);
    free(r);
}

/* ---- commands ---------------------------------------------------------------- */

static void connection_lost(dmw_redis_t *r, int err)
{
    snprintf(r->error, sizeof r->error, "%s", r->context->errstr);
    kit_log("redis", "connection lost (%s): reconnecting", r->error[0] ? r->error : dmw_errno_name(err));
    redisFree(r->context);
    r->context = NULL;
}

/* Connect again, pausing 20 ms, 40 ms, ... (at most 1 s) between attempts,
 * until `reconnect_ms` after the loss. The pause is a deliberate delay
 * against an outside server that has nothing to signal us with, not a wait
 * for a condition another thread could announce. */
static int reconnect(dmw_redis_t *r, int64_t lost_at)
{
    long pause = FIRST_PAUSE_MS;
    for (int attempt = 1;; attempt++) {
        int err = connect_once(r);
        if (err == 0) {
            r->reconnects++;
            r->reconnected = true;
            kit_log("redis", "reconnected after %d attempt(s)", attempt);
            return 0;
        }
        double left = (double)r->config.reconnect_ms - kit_elapsed_ms(lost_at);
        if (left <= 0) {
            kit_log("redis", "giving up after %ld ms: %s", r->config.reconnect_ms, r->error);
            return err;
        }
        kit_sleep_ms(pause < left ? pause : (long)left);
        pause = pause * 2 < MAX_PAUSE_MS ? pause * 2 : MAX_PAUSE_MS;
    }
}

static int take_reply(dmw_redis_t *r, redisReply *got, redisReply **reply)
{
    if (got->type == REDIS_REPLY_ERROR) {
        snprintf(r->error, sizeof r->error, "%s", got->str);
        freeReplyObject(got);
        return EPROTO;
    }
    *reply = got;
    return 0;
}

static int call(dmw_redis_t *r, long block_ms, redisReply **reply, const char *format, va_list args)
{
    if (r == NULL || reply == NULL || format == NULL || block_ms < 0)
        return EINVAL;
    *reply = NULL;
    int64_t lost_at = kit_now_ns();
    for (;;) {
        if (r->context == NULL) {
            int err = reconnect(r, lost_at);
            if (err != 0)
                return err;
        }
        long timeout = r->config.connect_timeout_ms + block_ms;
        if (timeout != r->reply_timeout_ms && redisSetTimeout(r->context, timeval_ms(timeout)) == REDIS_OK)
            r->reply_timeout_ms = timeout;
        va_list copy;
        va_copy(copy, args);
        errno = 0;
        redisReply *got = redisvCommand(r->context, format, copy);
        int saved = errno;
        va_end(copy);
        if (got != NULL)
            return take_reply(r, got, reply);
        int err = context_errno(r->context, saved);
        if (r->context->err != REDIS_ERR_IO && r->context->err != REDIS_ERR_EOF) {
            connection_lost(r, err); /* hiredis cannot reuse a context after an error */
            return err;
        }
        connection_lost(r, err);
        lost_at = kit_now_ns();
    }
}

int dmw_redis_call(dmw_redis_t *r, redisReply **reply, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    int err = call(r, 0, reply, format, args);
    va_end(args);
    return err;
}

int dmw_redis_block(dmw_redis_t *r, long block_ms, redisReply **reply, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    int err = call(r, block_ms, reply, format, args);
    va_end(args);
    return err;
}

bool dmw_redis_reconnected(dmw_redis_t *r)
{
    bool was = r && r->reconnected;
    if (r)
        r->reconnected = false;
    return was;
}

long dmw_redis_reconnects(const dmw_redis_t *r) { return r ? r->reconnects : 0; }
const char *dmw_redis_error(const dmw_redis_t *r) { return r ? r->error : ""; }
const dmw_keys_t *dmw_redis_keys(const dmw_redis_t *r) { return r ? &r->keys : NULL; }
const dmw_config_t *dmw_redis_config(const dmw_redis_t *r) { return r ? &r->config : NULL; }

const char *dmw_errno_name(int code)
{
    switch (code) {
    case ECONNRESET: return "ECONNRESET";
    case EPROTO: return "EPROTO";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case ENETUNREACH: return "ENETUNREACH";
    case ECONNABORTED: return "ECONNABORTED";
    default: return kit_errno_name(code);
    }
}
