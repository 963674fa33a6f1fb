/**
 * @file dmw_journal.c
 * @brief The chapter-07 test journal: the commands and deliveries of every
 *        process of a run, their roles, and crash points (dmw_journal.h).
 */
#define _GNU_SOURCE /* memfd_create, dl_iterate_phdr */
#include "dmw_journal.h"

#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "kit_sched.h"
#include "kit_test.h"

enum { MAX_COMMANDS = 8192, MAX_DELIVERIES = 2048, MAX_ROLES = 32 };

struct command_slot {
    atomic_bool whole; /* set last, with release: the entry may be read */
    journal_command_t command;
};

struct delivery_slot {
    atomic_bool whole;
    journal_delivery_t delivery;
};

/* Shared by the test process and every process of the run: forked copies,
 * and - judged - the subject programs it starts, which map it from the
 * descriptor they are handed (journal_attach). The test reads what they
 * wrote as their word: every entry is copied and bounded before it is read
 * (journal_command). */
struct journal {
    atomic_long commands;   /* entries claimed; those past MAX_COMMANDS are dropped */
    atomic_long deliveries;
    struct command_slot command[MAX_COMMANDS];
    struct delivery_slot delivery[MAX_DELIVERIES];
};

static struct journal *journal;
static int journal_memory = -1; /* the descriptor it is mapped from */

/* A role: set while a call of dmw_worker_run() or dmw_reap() runs. */
struct role {
    bool active;
    char name[JOURNAL_ROLE_MAX];
    int pass;
    int sent;        /* commands answered in this pass */
    long last_index; /* the journal index of the last of them, or -1 */
};
/* In the test's own process, where threads make calls side by side: each
 * thread's own. */
static _Thread_local struct role thread_role;
/* In a call's own process (journal_call_process), which makes one call:
 * the role of every thread of it - a thread the code under test starts
 * sends its commands for the call too, counted and crashed like the
 * caller's. Guarded by process_lock: */
static pthread_mutex_t process_lock = PTHREAD_MUTEX_INITIALIZER;
static struct role process_role;
static bool whole_process;             /* set before any thread of the process */
static _Thread_local bool made_the_call; /* this thread entered the role (its beats are counted) */
static atomic_bool crash_armed;        /* journal_crash_after_next_call(): the next counted command's */

/* Passes made by each role in this process. Guarded by passes_lock: */
static pthread_mutex_t passes_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char name[JOURNAL_ROLE_MAX];
    int passes;
} passes[MAX_ROLES];
static int roles_seen;

/* This process's crash point (journal_call_process()): set in a call's process before it works. */
static char crash_role[JOURNAL_ROLE_MAX];
static int crash_number;

/* journal_before_next_command_naming(): the calls to make, a key each, each
 * taken (its function set to NULL) by the first command that names its key. */
static struct hook {
    void (*_Atomic fn)(void *ctx); /* read without the lock only to see whether any is armed */
    void *ctx;
    char key[JOURNAL_KEY_MAX]; /* as commands show it */
} hooks[JOURNAL_HOOKS];        /* guarded by hooks_lock (a hook's call is made after it is let go) */
static pthread_mutex_t hooks_lock = PTHREAD_MUTEX_INITIALIZER;

/* Where this program's file is loaded. The journal keeps each return
 * address as its offset in the program's file, which a reader in another
 * process - another program, judged - can still name (journal_describe).
 * Found where the journal is mapped, before any thread of the run. */
static uintptr_t bias;

static int first_object(struct dl_phdr_info *info, size_t size, void *out)
{
    (void)size;
    *(uintptr_t *)out = info->dlpi_addr;
    return 1;
}

static void *map_journal(int fd)
{
    dl_iterate_phdr(first_object, &bias);
    void *shared = mmap(NULL, sizeof *journal, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return shared == MAP_FAILED ? NULL : shared;
}

void journal_open(void)
{
    if (journal == NULL) {
        journal_memory = memfd_create("dmw-journal", MFD_CLOEXEC);
        if (journal_memory < 0 || ftruncate(journal_memory, sizeof *journal) != 0 ||
            (journal = map_journal(journal_memory)) == NULL)
            fail_msg("cannot map the tests' command journal: %s", strerror(errno));
    }
    journal_reset();
}

int journal_fd(void)
{
    return journal_memory;
}

int journal_attach(int fd)
{
    journal = map_journal(fd);
    close(fd);
    return journal ? 0 : errno;
}

/* A new run: each role's calls count from 1 again. */
static void forget_roles(void)
{
    pthread_mutex_lock(&passes_lock);
    roles_seen = 0;
    pthread_mutex_unlock(&passes_lock);
}

void journal_reset(void)
{
    forget_roles();
    long used = atomic_load(&journal->commands);
    for (long i = 0; i < used && i < MAX_COMMANDS; i++)
        atomic_store(&journal->command[i].whole, false);
    long delivered = atomic_load(&journal->deliveries);
    for (long i = 0; i < delivered && i < MAX_DELIVERIES; i++)
        atomic_store(&journal->delivery[i].whole, false);
    atomic_store(&journal->commands, 0);
    atomic_store(&journal->deliveries, 0);
}

void journal_call_process(const char *role_name, int crash_after)
{
    forget_roles();
    whole_process = true;
    snprintf(crash_role, sizeof crash_role, "%s", role_name);
    crash_number = crash_after;
}

void journal_crash_after_next_call(void)
{
    atomic_store(&crash_armed, true);
}

/* ---- roles ------------------------------------------------------------------------ */

static int next_pass(const char *name)
{
    pthread_mutex_lock(&passes_lock);
    int i = 0;
    while (i < roles_seen && strcmp(passes[i].name, name) != 0)
        i++;
    if (i == roles_seen && roles_seen < MAX_ROLES) {
        snprintf(passes[i].name, sizeof passes[i].name, "%s", name);
        passes[i].passes = 0;
        roles_seen++;
    }
    int pass = i < MAX_ROLES ? ++passes[i].passes : 0;
    pthread_mutex_unlock(&passes_lock);
    return pass;
}

/* The role the calling thread's commands count for. */
static struct role *current_role(void)
{
    return whole_process ? &process_role : &thread_role;
}

static void lock_role(void)
{
    if (whole_process)
        pthread_mutex_lock(&process_lock);
}

static void unlock_role(void)
{
    if (whole_process)
        pthread_mutex_unlock(&process_lock);
}

/* Enter a role for one call; the previous one comes back when it returns (leave_role). */
static struct role enter_role(const char *name)
{
    struct role entered = { .active = true, .pass = next_pass(name), .last_index = -1 };
    snprintf(entered.name, sizeof entered.name, "%s", name);
    lock_role();
    struct role saved = *current_role();
    *current_role() = entered;
    unlock_role();
    made_the_call = true;
    return saved;
}

static void leave_role(const struct role *saved)
{
    lock_role();
    *current_role() = *saved;
    unlock_role();
    made_the_call = false;
}

/* Whether the calling thread's commands are counted now. */
static bool in_a_role(void)
{
    lock_role();
    bool active = current_role()->active;
    unlock_role();
    return active;
}

/* Linked in place of the code under test's two functions (-Wl,--wrap): the
 * kit's master calls dmw_reap, the fixture and the tests dmw_worker_run. */
int __real_dmw_worker_run(const dmw_config_t *config, const dmw_worker_config_t *worker, dmw_worker_stats_t *stats);
int __wrap_dmw_worker_run(const dmw_config_t *config, const dmw_worker_config_t *worker, dmw_worker_stats_t *stats);
int __real_dmw_reap(struct dmw_redis *redis, long *returned, long *dead);
int __wrap_dmw_reap(struct dmw_redis *redis, long *returned, long *dead);

int __wrap_dmw_worker_run(const dmw_config_t *config, const dmw_worker_config_t *worker, dmw_worker_stats_t *stats)
{
    char name[JOURNAL_ROLE_MAX];
    snprintf(name, sizeof name, "worker %s", worker && worker->name ? worker->name : "(unnamed)");
    struct role saved = enter_role(name);
    int rc = __real_dmw_worker_run(config, worker, stats);
    leave_role(&saved);
    return rc;
}

int __wrap_dmw_reap(struct dmw_redis *redis, long *returned, long *dead)
{
    struct role saved = enter_role("reaper");
    int rc = __real_dmw_reap(redis, returned, dead);
    leave_role(&saved);
    return rc;
}

/* ---- the commands ------------------------------------------------------------------ */

/* The program journal_describe names the offsets in: NULL, this one. */
static const char *places_program;

void journal_places_in(const char *program)
{
    places_program = program;
    kit_sched_symbolizer.foreign = program;
}

/* One word of a command, quoted when it holds a space or is empty; a key
 * without its run's prefix ("dmw:{t1-0}:queue" -> "queue"). */
static size_t put_word(char *out, size_t size, size_t at, const char *word, long length)
{
    const char *tag_end = length > 5 && strncmp(word, "dmw:{", 5) == 0 ? memchr(word, '}', (size_t)length) : NULL;
    if (tag_end && tag_end + 1 < word + length && tag_end[1] == ':') {
        length -= tag_end + 2 - word;
        word = tag_end + 2;
    }
    bool quote = length == 0 || memchr(word, ' ', (size_t)length) != NULL;
    int n = snprintf(out + at, size - at, "%s%s%.*s%s", at ? " " : "", quote ? "\"" : "", (int)length, word,
                     quote ? "\"" : "");
    return n < 0 ? at : at + (size_t)n < size ? at + (size_t)n : size - 1;
}

/* The words of a command in Redis's wire format ("*3\r\n$4\r\nLREM\r\n..."),
 * joined by spaces; an EVAL's script is shown as <script>. */
static void command_words(const char *wire, long length, char *out, size_t size)
{
    const char *at = wire, *end = wire + length;
    size_t used = 0;
    out[0] = '\0';
    long words = at < end && *at == '*' ? strtol(at + 1, NULL, 10) : 0;
    at = memchr(at, '\n', (size_t)(end - at));
    for (long i = 0; at && i < words && at + 1 < end && at[1] == '$'; i++) {
        long word_length = strtol(at + 2, NULL, 10);
        const char *word = memchr(at + 1, '\n', (size_t)(end - at - 1));
        if (word == NULL || word + 1 + word_length > end)
            break;
        word++;
        bool script = i == 1 && strncmp(out, "EVAL", 4) == 0;
        used = script ? put_word(out, size, used, "<script>", 8) : put_word(out, size, used, word, word_length);
        at = word + word_length + 1; /* the '\n' of the word's "\r\n" */
    }
}

static void format_command(const char *format, va_list args, char *out, size_t size)
{
    char *wire = NULL;
    va_list copy;
    va_copy(copy, args);
    long length = redisvFormatCommand(&wire, format, copy);
    va_end(copy);
    out[0] = '\0';
    if (length > 0)
        command_words(wire, length, out, size);
    redisFreeCommand(wire);
}

/* Is @p word one of the words of @p text? */
static bool has_word(const char *text, const char *word)
{
    size_t length = strlen(word);
    for (const char *at = strstr(text, word); at && length > 0; at = strstr(at + 1, word))
        if ((at == text || at[-1] == ' ') && (at[length] == ' ' || at[length] == '\0'))
            return true;
    return false;
}

/* Into the journal: command @p role->sent of @p role (its lock held). */
static void record(struct role *role, const char *text, const redisReply *reply, bool crash, void *const *stack,
                   int depth)
{
    long index = atomic_fetch_add(&journal->commands, 1);
    if (index >= MAX_COMMANDS)
        return;
    role->last_index = index;
    struct command_slot *slot = &journal->command[index];
    journal_command_t *c = &slot->command;
    bool integer = reply->type == REDIS_REPLY_INTEGER;
    *c = (journal_command_t){ .index = index, .pid = getpid(), .pass = role->pass, .number = role->sent,
                              .integer_reply = integer, .integer = integer ? reply->integer : 0,
                              .crashed_after = crash, .depth = depth };
    snprintf(c->role, sizeof c->role, "%s", role->name);
    snprintf(c->text, sizeof c->text, "%s", text);
    for (int i = 0; i < depth; i++)
        c->stack[i] = (void *)((uintptr_t)stack[i] - bias);
    atomic_store_explicit(&slot->whole, true, memory_order_release);
}

static bool crash_point_reached(const struct role *role)
{
    return crash_number > 0 && role->pass == 1 && role->sent == crash_number && strcmp(role->name, crash_role) == 0;
}

/* The kit's heartbeat, beating on a thread of its own in a call's process:
 * not the call's commands (their number would depend on time). Only the
 * two beats are left out: no command of the protocol reads like one. */
static bool a_beat_of_another_thread(const char *text)
{
    return whole_process && !made_the_call &&
           (strncmp(text, "SET alive:", 10) == 0 || strncmp(text, "SADD workers ", 13) == 0);
}

/* Whether a command reads or writes where a task is or how it ended - the
 * outcomes or a processing list: an armed crash waits for one, so that a
 * command of another kind first (a PING) does not take its place. */
static bool names_a_place_of_tasks(const char *text)
{
    return has_word(text, "outcomes") || strstr(text, " processing:") != NULL;
}

/* A command answered: counted for its role, recorded, and whether the
 * process dies now (a crash point, or one armed). */
static bool count_command(const char *text, const redisReply *reply, void *const *stack, int depth)
{
    bool crash = false;
    lock_role();
    struct role *role = current_role();
    if (role->active && !a_beat_of_another_thread(text)) {
        role->sent++;
        crash = (names_a_place_of_tasks(text) && atomic_exchange(&crash_armed, false)) || crash_point_reached(role);
        if (journal)
            record(role, text, reply, crash, stack, depth);
    }
    unlock_role();
    return crash;
}

static bool a_hook_is_armed(void)
{
    for (int i = 0; i < JOURNAL_HOOKS; i++)
        if (atomic_load(&hooks[i].fn) != NULL)
            return true;
    return false;
}

/* Takes hook @p slot's armed call if its key @p matches (@p text names it,
 * or it is @p text): its function, NULL if none, and its context. */
static void (*take_hook(int slot, const char *text, bool (*matches)(const char *, const char *), void **ctx))(void *)
{
    void (*fn)(void *ctx) = NULL;
    pthread_mutex_lock(&hooks_lock);
    if (atomic_load(&hooks[slot].fn) != NULL && matches(text, hooks[slot].key)) {
        fn = atomic_exchange(&hooks[slot].fn, NULL);
        *ctx = hooks[slot].ctx;
    }
    pthread_mutex_unlock(&hooks_lock);
    return fn;
}

/* Each hook whose key @p text names or is, once (a call may arm its hook
 * again: for the next command). */
static void run_hooks(const char *text, bool (*matches)(const char *, const char *))
{
    for (int slot = 0; slot < JOURNAL_HOOKS; slot++) {
        void *ctx = NULL;
        void (*fn)(void *ctx) = take_hook(slot, text, matches, &ctx);
        if (fn != NULL)
            fn(ctx);
    }
}

static bool is_key(const char *text, const char *key)
{
    return strcmp(text, key) == 0;
}

/* Linked in place of hiredis's redisvCommand() (-Wl,--wrap=redisvCommand):
 * every command of the kit's connection passes here. A command whose reply
 * was lost (NULL) is not counted: the kit sends it again. */
void *__real_redisvCommand(redisContext *context, const char *format, va_list args);
void *__wrap_redisvCommand(redisContext *context, const char *format, va_list args);

void *__wrap_redisvCommand(redisContext *context, const char *format, va_list args)
{
    char text[JOURNAL_TEXT_MAX] = "";
    void *stack[JOURNAL_DEPTH + 1];
    int depth = 0;
    bool counted = in_a_role();
    if (counted || a_hook_is_armed())
        format_command(format, args, text, sizeof text);
    if (counted)
        depth = backtrace(stack, JOURNAL_DEPTH + 1);
    run_hooks(text, has_word);
    redisReply *reply = __real_redisvCommand(context, format, args);
    if (reply == NULL)
        return NULL;
    /* (the stack without this wrapper's own frame) */
    if (count_command(text, reply, stack + 1, depth > 0 ? depth - 1 : 0))
        raise(SIGKILL); /* a crash point: the reply arrived, then the "machine" died */
    return reply;
}

/* The keys a call may be armed for while processes the test started run
 * (journal_watch), as commands show them. */
static char watched[JOURNAL_HOOKS][JOURNAL_KEY_MAX];

/* @p key as commands show it ("dmw:{t1-0}:outcomes" -> "outcomes"). */
static void shown(const char *key, char *out, size_t size)
{
    out[0] = '\0';
    put_word(out, size, 0, key, (long)strlen(key));
}

void journal_watch(const char *key)
{
    char text[JOURNAL_KEY_MAX];
    shown(key, text, sizeof text);
    for (int i = 0; i < JOURNAL_HOOKS; i++)
        if (watched[i][0] == '\0' || strcmp(watched[i], text) == 0) {
            snprintf(watched[i], sizeof watched[i], "%s", text);
            return;
        }
}

const char *journal_watched(int index)
{
    return index >= 0 && index < JOURNAL_HOOKS && watched[index][0] ? watched[index] : NULL;
}

void journal_run_armed(const char *key)
{
    run_hooks(key, is_key);
}

void journal_before_next_command_naming(const char *key, void (*fn)(void *ctx), void *ctx)
{
    char text[JOURNAL_KEY_MAX];
    shown(key, text, sizeof text);
    pthread_mutex_lock(&hooks_lock);
    int slot = 0; /* the key's own, or the first never used */
    while (slot < JOURNAL_HOOKS - 1 && hooks[slot].key[0] && strcmp(hooks[slot].key, text) != 0)
        slot++;
    snprintf(hooks[slot].key, sizeof hooks[slot].key, "%s", text);
    hooks[slot].ctx = ctx;
    atomic_store(&hooks[slot].fn, fn);
    pthread_mutex_unlock(&hooks_lock);
}

/* ---- deliveries -------------------------------------------------------------------- */

int journal_note_delivery(const dmw_task_t *task)
{
    if (journal == NULL)
        return 0;
    long index = atomic_fetch_add(&journal->deliveries, 1);
    if (index >= MAX_DELIVERIES)
        return 0;
    struct delivery_slot *slot = &journal->delivery[index];
    lock_role();
    const struct role *role = current_role();
    slot->delivery = (journal_delivery_t){ .id = task->id, .attempt = task->attempt, .pid = getpid(),
                                           .taken_at = role->active ? role->last_index : -1 };
    snprintf(slot->delivery.worker, sizeof slot->delivery.worker, "%s", role->active ? role->name : "a worker");
    unlock_role();
    atomic_store_explicit(&slot->whole, true, memory_order_release);
    return journal_deliveries(task->id, NULL, 0);
}

/* ---- reading the journal ------------------------------------------------------------
 * What another process wrote is its word, and may be anything: each entry
 * is copied out of the shared memory, then bounded - its texts ended, its
 * depth kept to its array - before anything reads it. */

static long entries(_Atomic long *counter, long most)
{
    long count = atomic_load(counter);
    return count < 0 ? 0 : count < most ? count : most;
}

int journal_deliveries(long id, journal_delivery_t *out, int max)
{
    kit_verdict_rests_on(KIT_WORD_JOURNAL);
    long count = entries(&journal->deliveries, MAX_DELIVERIES);
    int found = 0;
    for (long i = 0; i < count; i++) {
        const struct delivery_slot *slot = &journal->delivery[i];
        if (!atomic_load_explicit(&slot->whole, memory_order_acquire))
            continue;
        journal_delivery_t copy = slot->delivery;
        copy.worker[sizeof copy.worker - 1] = '\0';
        if (copy.id != id)
            continue;
        if (found < max)
            out[found] = copy;
        found++;
    }
    return found;
}

long journal_command_count(void)
{
    return entries(&journal->commands, MAX_COMMANDS);
}

/* The copies journal_command hands out: a few at once, per thread (a caller
 * may hold the one journal_find gave while it asks for another). */
enum { COPIES = 4 };
static _Thread_local journal_command_t copies[COPIES];
static _Thread_local int next_copy;

const journal_command_t *journal_command(long index)
{
    if (index < 0 || index >= journal_command_count())
        return NULL;
    const struct command_slot *slot = &journal->command[index];
    if (!atomic_load_explicit(&slot->whole, memory_order_acquire))
        return NULL;
    journal_command_t *copy = &copies[next_copy++ % COPIES];
    *copy = slot->command;
    copy->role[sizeof copy->role - 1] = '\0';
    copy->text[sizeof copy->text - 1] = '\0';
    copy->depth = copy->depth < 0 ? 0 : copy->depth > JOURNAL_DEPTH ? JOURNAL_DEPTH : copy->depth;
    return copy;
}

const journal_command_t *journal_find(pid_t pid, const char *role_name, int number)
{
    for (long i = 0; i < journal_command_count(); i++) {
        const journal_command_t *c = journal_command(i);
        if (c && c->pid == pid && c->pass == 1 && c->number == number && strcmp(c->role, role_name) == 0)
            return c;
    }
    return NULL;
}

int journal_pass_length(pid_t pid, const char *role_name)
{
    kit_verdict_rests_on(KIT_WORD_JOURNAL);
    int length = 0;
    for (long i = 0; i < journal_command_count(); i++) {
        const journal_command_t *c = journal_command(i);
        if (c && c->pid == pid && c->pass == 1 && strcmp(c->role, role_name) == 0 && c->number > length)
            length = c->number;
    }
    return length;
}

/* Code of the kit, the tests or a library: not where the code under test sent a command from. */
static bool kit_place(const char *place)
{
    static const char *const kit_files[] = { "dmw_redis.c:", "dmw_scripts.c:", "dmw_heartbeat.c:",
                                             "dmw_record.c:", "dmw_master.c:", "dmw_server.c:",
                                             "dmw_journal.c:", "dmw_fixture.c:", "test_dmw.c:" };
    if (strchr(place, ':') == NULL || strstr(place, "(reference)"))
        return true; /* no line: hiredis, the C library */
    for (size_t i = 0; i < sizeof kit_files / sizeof kit_files[0]; i++)
        if (strncmp(place, kit_files[i], strlen(kit_files[i])) == 0)
            return true;
    return false;
}

/* ", called from finish (dmw_worker.c:114)": the code under test's call of
 * the function that sent the command (places[mine]), when it is the code
 * under test's too - the order of two steps is often decided there, not in
 * the helper that sends one of them - or "". */
static void code_caller(char places[][160], int depth, int mine, char *out, size_t size)
{
    out[0] = '\0';
    if (mine + 1 >= depth || kit_place(places[mine + 1]))
        return;
    const char *function = strstr(places[mine + 1], " in ");
    const char *own = strstr(places[mine], " in ");
    if (function == NULL || (own && strcmp(own, function) == 0))
        return; /* (a function split in parts, or recursion: the same name again) */
    snprintf(out, size, ", called from %s (%.*s)", function + 4, (int)(function - places[mine + 1]), places[mine + 1]);
}

void journal_describe(const journal_command_t *c, char *out, size_t size)
{
    char places[JOURNAL_DEPTH][160];
    void *stack[JOURNAL_DEPTH];
    for (int i = 0; i < c->depth; i++) /* the offsets as places this process names */
        stack[i] = places_program ? kit_sched_foreign_place((uint64_t)(uintptr_t)c->stack[i])
                                  : (void *)((uintptr_t)c->stack[i] + bias);
    kit_describe_places(stack, c->depth, places);
    int mine = 0;
    while (mine < c->depth && kit_place(places[mine]))
        mine++;
    if (mine == c->depth) {
        snprintf(out, size, "`%s`", c->text);
        return;
    }
    /* The kit's helper the code under test called, unless it is the plain call. */
    const char *helper = mine > 0 ? strstr(places[mine - 1], " in ") : NULL;
    char caller[480];
    kit_describe_caller(stack[mine], caller, sizeof caller); /* a helper the compiler inlined: its call */
    if (caller[0] == '\0')
        code_caller(places, c->depth, mine, caller, sizeof caller);
    if (helper && strcmp(helper, " in dmw_redis_call") != 0 && strcmp(helper, " in dmw_redis_block") != 0 &&
        strcmp(helper, " in call") != 0)
        snprintf(out, size, "`%s` (%s, called at %s%s)", c->text, helper + 4, places[mine], caller);
    else
        snprintf(out, size, "`%s` (%s%s)", c->text, places[mine], caller);
}
