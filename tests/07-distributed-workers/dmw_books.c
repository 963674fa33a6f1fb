/**
 * @file dmw_books.c
 * @brief The chapter-07 books: where every task of a run ended, and who
 *        put it there (dmw_books.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "dmw_books.h"

#include "kit_test.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmw_master.h"

enum { MAX_TASKS = 512, MAX_WORKERS = 32, MESSAGE_MAX = 3000 };

/* One task as the server holds it. */
struct task {
    long id;
    char payload[DMW_PAYLOAD_MAX];
    bool has_outcome;
    dmw_outcome_t outcome;
    int queued, dead, processing;  /* copies of its record in each kind of list */
    char holder[DMW_NAME_MAX];     /* a worker whose processing list holds it */
};

struct run {
    fixture_t *fx;
    const books_t *books;
    const char *file;
    int line;
    long count;
    struct task tasks[MAX_TASKS];
};

static struct task *task_of(struct run *run, long id)
{
    for (long i = 0; i < run->count; i++)
        if (run->tasks[i].id == id)
            return &run->tasks[i];
    return NULL;
}

/* ---- reading the run ------------------------------------------------------------- */

static void read_tasks(struct run *run)
{
    redisReply *reply = NULL;
    assert_ok(dmw_redis_call(run->fx->redis, &reply, "HGETALL %s", dmw_redis_keys(run->fx->redis)->tasks));
    for (size_t i = 0; reply->type == REDIS_REPLY_ARRAY && i + 1 < reply->elements && run->count < MAX_TASKS; i += 2) {
        struct task *task = &run->tasks[run->count++];
        *task = (struct task){ .id = strtol(reply->element[i]->str, NULL, 10) };
        snprintf(task->payload, sizeof task->payload, "%s", reply->element[i + 1]->str);
        int err = dmw_outcome(run->fx->master, task->id, &task->outcome);
        if (err != ENOENT)
            assert_ok(err);
        task->has_outcome = err == 0;
    }
    freeReplyObject(reply);
}

/* Count the records of @p key's list into each task's @p field; note @p holder. */
static void count_list(struct run *run, const char *key, size_t field, const char *holder)
{
    redisReply *reply = NULL;
    assert_ok(dmw_redis_call(run->fx->redis, &reply, "LRANGE %s 0 -1", key));
    for (size_t i = 0; reply->type == REDIS_REPLY_ARRAY && i < reply->elements; i++) {
        dmw_task_t record;
        struct task *task = dmw_record_decode(reply->element[i]->str, &record) == 0 ? task_of(run, record.id) : NULL;
        if (task == NULL)
            continue;
        (*(int *)((char *)task + field))++;
        if (holder)
            snprintf(task->holder, sizeof task->holder, "%s", holder);
    }
    freeReplyObject(reply);
}

/* The workers that may hold tasks: the run's set, and every worker the test forked. */
static int worker_names(struct run *run, char (*names)[DMW_NAME_MAX])
{
    int count = 0;
    redisReply *reply = NULL;
    assert_ok(dmw_redis_call(run->fx->redis, &reply, "SMEMBERS %s", dmw_redis_keys(run->fx->redis)->workers));
    for (size_t i = 0; reply->type == REDIS_REPLY_ARRAY && i < reply->elements && count < MAX_WORKERS; i++)
        snprintf(names[count++], DMW_NAME_MAX, "%s", reply->element[i]->str);
    freeReplyObject(reply);
    for (int i = 0; i < run->fx->child_count && count < MAX_WORKERS; i++) {
        const char *name = run->fx->children[i].name;
        bool known = strcmp(run->fx->children[i].role, "reaper") == 0 || name[0] == '\0';
        for (int j = 0; j < count && !known; j++)
            known = strcmp(names[j], name) == 0;
        if (!known)
            snprintf(names[count++], DMW_NAME_MAX, "%s", name);
    }
    return count;
}

static void read_places(struct run *run)
{
    const dmw_keys_t *keys = dmw_redis_keys(run->fx->redis);
    count_list(run, keys->queue, offsetof(struct task, queued), NULL);
    count_list(run, keys->dead, offsetof(struct task, dead), NULL);
    char names[MAX_WORKERS][DMW_NAME_MAX];
    int workers = worker_names(run, names);
    for (int i = 0; i < workers; i++) {
        char key[DMW_KEY_MAX];
        assert_ok(dmw_key_processing(run->fx->redis, names[i], key, sizeof key));
        count_list(run, key, offsetof(struct task, processing), names[i]);
    }
}

/* ---- who did what ------------------------------------------------------------------ */

/* "the reaper (dmw_reap)" or "worker w1". */
static const char *who(const journal_command_t *c)
{
    return strcmp(c->role, "reaper") == 0 ? "the reaper (dmw_reap)" : c->role;
}

/* Is @p word one of the words of @p c's text (a key: "queue", "outcomes")? */
static bool names_word(const journal_command_t *c, const char *word)
{
    size_t length = strlen(word);
    for (const char *at = strstr(c->text, word); at; at = strstr(at + 1, word))
        if (at > c->text && at[-1] == ' ' && (at[length] == ' ' || at[length] == '\0'))
            return true;
    return false;
}

/* Does @p c's text hold the record of task @p id (`"ID ATTEMPTS ...`)? */
static bool names_record(const journal_command_t *c, long id)
{
    char needle[32];
    snprintf(needle, sizeof needle, "\"%ld ", id);
    return strstr(c->text, needle) != NULL;
}

/* The first command that wrote task @p id's outcome: an HSETNX (or HSET)
 * that set the field, or the kit's move-back script burying it. */
static const journal_command_t *outcome_written(long id)
{
    char hset[40], hsetnx[40], buried[40];
    snprintf(hset, sizeof hset, "HSET outcomes %ld ", id);
    snprintf(hsetnx, sizeof hsetnx, "HSETNX outcomes %ld ", id);
    snprintf(buried, sizeof buried, " %ld \"dead ", id);
    for (long i = 0; i < journal_command_count(); i++) {
        const journal_command_t *c = journal_command(i);
        if (c == NULL || !c->integer_reply || c->integer != 1)
            continue;
        if (strncmp(c->text, hset, strlen(hset)) == 0 || strncmp(c->text, hsetnx, strlen(hsetnx)) == 0 ||
            (strncmp(c->text, "EVAL ", 5) == 0 && strstr(c->text, buried)))
            return c;
    }
    return NULL;
}

/* The last of the code under test's own commands in (from, to) that put
 * task @p id's record on the queue (the kit's script never re-queues a task
 * with an outcome), or NULL. */
static const journal_command_t *pushed_to_queue(long id, long from, long to)
{
    for (long i = to - 1; i > from; i--) {
        const journal_command_t *c = journal_command(i);
        if (c && names_record(c, id) && strncmp(c->text, "EVAL ", 5) != 0 && names_word(c, "queue"))
            return c;
    }
    return NULL;
}

/* The last command before @p to that named task @p id's record, or NULL. */
static const journal_command_t *last_naming(long id, long to)
{
    for (long i = to - 1; i >= 0; i--) {
        const journal_command_t *c = journal_command(i);
        if (c && names_record(c, id))
            return c;
    }
    return NULL;
}

/* Append @p lead and "worker w1 at its command 4: `LREM ...` (dmw_worker.c:97
 * in acknowledge)" - "at command 4 of its call 3" for a role called often. */
static void put_command(char *out, size_t size, const char *lead, const journal_command_t *c)
{
    char said[600], call[32] = "";
    journal_describe(c, said, sizeof said);
    if (c->pass > 1)
        snprintf(call, sizeof call, " of its call %d", c->pass);
    size_t used = strlen(out);
    snprintf(out + used, size - used, "%s%s at %scommand %d%s: %s", lead, who(c), c->pass > 1 ? "" : "its ",
             c->number, call, said);
}

/* ---- the failures ------------------------------------------------------------------- */

static _Noreturn void fail_task(const struct run *run, const char *message)
{
    char story[1200] = "";
    if (run->books->story)
        run->books->story(run->books->story_ctx, story, sizeof story);
    kit_fail_at(run->file, run->line, "%s%s%s", message, story[0] ? "\n  what the test did: " : "", story);
    abort(); /* kit_fail_at does not return */
}

static const char *const kind_names[] = { [DMW_DONE] = "done", [DMW_FAILED] = "failed", [DMW_DEAD] = "dead-lettered" };

/* A task without an outcome once the run should be over: where is it? */
static void check_ended(const struct run *run, const struct task *task)
{
    char message[MESSAGE_MAX];
    if (task->has_outcome)
        return;
    if (task->queued + task->processing + task->dead == 0) {
        snprintf(message, sizeof message, "task %ld (\"%s\") was lost: it has no outcome and is in no list - not on the "
                 "queue, in no processing list, not in the dead letters. At every instant a task is in exactly one "
                 "place, or has its outcome: it leaves a processing list only once its outcome is written (outcome, "
                 "then acknowledgement), or in the same atomic step that puts it in the next list (one script: "
                 "dmw_redis_move_back()) - never a remove followed by a push", task->id, task->payload);
        const journal_command_t *last = last_naming(task->id, journal_command_count());
        if (last && !last->crashed_after) /* a crash's last command is in the story */
            put_command(message, sizeof message, "\n  the last command that named it was sent by ", last);
    } else if (task->processing > 0) {
        snprintf(message, sizeof message, "task %ld (\"%s\") never got its outcome: it is still in the processing list "
                 "of worker %s, which no longer works on it - once a worker's heartbeat has expired, the reaper "
                 "(dmw_reap) returns every task of its processing list to the queue", task->id, task->payload,
                 task->holder);
    } else {
        snprintf(message, sizeof message, "task %ld (\"%s\") never got its outcome: it is still %s", task->id,
                 task->payload, task->queued ? "on the queue, and no worker took it" : "in the dead letters, without "
                 "an outcome - a dead-lettered task has its outcome (kind dead) written in the same step");
    }
    fail_task(run, message);
}

static void check_kind(const struct run *run, const struct task *task)
{
    char message[MESSAGE_MAX];
    dmw_kind_t want = run->books->expect(task->payload);
    int max = run->fx->config.max_attempts;
    if (task->outcome.kind != want) {
        snprintf(message, sizeof message, "task %ld (\"%s\") ended %s (by %s, attempt %d: \"%s\"), but it must end %s",
                 task->id, task->payload, kind_names[task->outcome.kind], task->outcome.worker, task->outcome.attempts,
                 task->outcome.text, kind_names[want]);
        fail_task(run, message);
    }
    if (want == DMW_DEAD && task->outcome.attempts != max) {
        snprintf(message, sizeof message, "task %ld (\"%s\") was dead-lettered after %d attempt(s), by %s; it must "
                 "be after its %d deliveries (max_attempts), each counted once", task->id, task->payload,
                 task->outcome.attempts, task->outcome.worker, max);
        fail_task(run, message);
    }
}

/* With its outcome, a task is in the dead letters once if it was buried, and nowhere else. */
static void check_places(const struct run *run, const struct task *task)
{
    char message[MESSAGE_MAX], where[200];
    int dead = task->outcome.kind == DMW_DEAD ? 1 : 0;
    const char *rule;
    if (task->queued) {
        snprintf(where, sizeof where, "is on the queue %d time(s)", task->queued);
        rule = "a task is in one place at every instant, and one with an outcome in none but the dead letters";
    } else if (task->processing) {
        snprintf(where, sizeof where, "is still in the processing list of worker %s", task->holder);
        rule = "a worker acknowledges (LREM) the record exactly as it took it, once the outcome is written";
    } else if (task->dead != dead) {
        snprintf(where, sizeof where, "is in the dead letters %d time(s), where it belongs %d time(s)", task->dead,
                 dead);
        rule = "a task is buried once, together with its outcome, in one step";
    } else {
        return;
    }
    snprintf(message, sizeof message, "task %ld (\"%s\") has its outcome (%s, by %s) and yet %s: %s", task->id,
             task->payload, kind_names[task->outcome.kind], task->outcome.worker, where, rule);
    const journal_command_t *last = last_naming(task->id, journal_command_count());
    if (last)
        put_command(message, sizeof message, "\n  the last command that named it was sent by ", last);
    fail_task(run, message);
}

/* A delivery taken after the task's outcome was written is one too many:
 * say who put the task back, and who took it. */
static bool written_by_test(const struct run *run, long id)
{
    for (int i = 0; i < run->books->written_before_count; i++)
        if (run->books->written_before[i] == id)
            return true;
    return false;
}

static void check_not_handed_out_again(const struct run *run, const struct task *task)
{
    bool before = written_by_test(run, task->id);
    const journal_command_t *written = before ? NULL : outcome_written(task->id);
    long written_at = before ? -1 : written ? written->index : LONG_MAX;
    journal_delivery_t deliveries[16];
    int count = journal_deliveries(task->id, deliveries, 16);
    for (int i = 0; i < count && i < 16; i++) {
        const journal_delivery_t *late = &deliveries[i];
        if (late->taken_at <= written_at)
            continue;
        char message[MESSAGE_MAX];
        snprintf(message, sizeof message, "task %ld (\"%s\") was handed out again after its outcome was written: "
                 "%s ran it as attempt %d, although its outcome (%s, attempt %d)", task->id, task->payload,
                 late->worker, late->attempt, kind_names[task->outcome.kind], task->outcome.attempts);
        if (written)
            put_command(message, sizeof message, " was written by ", written);
        else
            strcat(message, " was there before the run began");
        const journal_command_t *back = pushed_to_queue(task->id, written_at, late->taken_at);
        const journal_command_t *copy = back ? NULL : pushed_to_queue(task->id, -1, written_at);
        const journal_command_t *take = journal_command(late->taken_at);
        if (back)
            put_command(message, sizeof message, ".\n  It was put back on the queue by ", back);
        else if (copy)
            put_command(message, sizeof message, ".\n  Its record was in two places at once: a copy was pushed "
                        "onto the queue by ", copy);
        else if (take)
            put_command(message, sizeof message, ".\n  It was taken again by ", take);
        size_t used = strlen(message);
        snprintf(message + used, sizeof message - used, ".\n  A task that has its outcome is never delivered again: "
                 "a dead worker's task that already has one is only removed from its list (dmw_redis_move_back() "
                 "checks), and a worker takes only from the queue, or from its own list after a reconnection");
        fail_task(run, message);
    }
}

/* ---- the books ---------------------------------------------------------------------- */

void books_check_at(fixture_t *fx, int await_err, const books_t *books, const char *file, int line)
{
    static struct run run; /* large: not on the test's stack */
    run = (struct run){ .fx = fx, .books = books, .file = file, .line = line };
    if (await_err == ENOSYS)
        kit_fail_at(file, line, "dmw_reap returned ENOSYS (dmw_await runs it): not implemented yet - write it in "
                                "exercises/07-distributed-workers/");
    if (await_err != 0 && await_err != ETIMEDOUT)
        kit_fail_at(file, line, "dmw_await returned %s (%d): the master's wait, or the reaper it runs (dmw_reap), "
                    "failed", dmw_errno_name(await_err), await_err);
    read_tasks(&run);
    read_places(&run);
    for (long i = 0; i < run.count; i++)
        check_ended(&run, &run.tasks[i]);
    for (long i = 0; i < run.count && books->handed_out_again; i++)
        check_not_handed_out_again(&run, &run.tasks[i]);
    for (long i = 0; i < run.count; i++) {
        check_kind(&run, &run.tasks[i]);
        check_places(&run, &run.tasks[i]);
    }
    if (await_err == ETIMEDOUT)
        kit_fail_at(file, line, "dmw_await: still waiting after the test's time limit, although every task has its "
                    "outcome - the master counts outcomes against tasks (a wake-up was lost?)");
}
