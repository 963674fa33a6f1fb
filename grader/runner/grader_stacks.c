/**
 * @file grader_stacks.c
 * @brief Stacks and race reports, cut to the frames a student can act on.
 *
 * gdb's backtraces (a hang, a crash, a test's own hang check) and
 * ThreadSanitizer's reports name every frame: libc, the sanitizer runtime,
 * the harness's wrappers. The student needs the few that are theirs - their
 * file and line, and the test's line that called them. A frame is kept when
 * its file lies in the kit (a relative path, or under the kit's root) or in
 * the submission graded from outside the kit, and is not the harness's own
 * (grader/, lib/). Addresses are dropped: no bare hex on screen.
 */
#define _POSIX_C_SOURCE 200809L
#include "grader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_CHAIN = 5 };

static void append_text(char *detail, size_t size, const char *text)
{
    append_line(detail, size, text, strlen(text));
}

static bool starts_with(const char *text, const char *prefix)
{
    return prefix && prefix[0] && strncmp(text, prefix, strlen(prefix)) == 0;
}

/* A frame line of gdb ("#2  0x00005 in msgq_put (q=...) at dir/msgq.c:41")
 * or of ThreadSanitizer ("    #1 msgq_put dir/msgq.c:41 (test_msgq+0x4c38)"):
 * the function, and the file:line if there is one. */
static bool parse_frame(const char *line, char *function, size_t fsize, char *file, size_t size)
{
    while (*line == ' ')
        line++;
    if (*line != '#')
        return false;
    line += strcspn(line, " ");
    line += strspn(line, " ");
    const char *in = strstr(line, " in ");
    if (strncmp(line, "0x", 2) == 0 && in)
        line = in + 4;
    size_t length = strcspn(line, " (\n");
    textf(function, fsize, "%.*s", (int)length, line);
    const char *at = strstr(line, " at ");
    const char *where = at ? at + 4 : line + length + strspn(line + length, " ");
    if (!at && (where[0] == '(' || strncmp(where, "<null>", 6) == 0))
        where = "";
    textf(file, size, "%.*s", (int)strcspn(where, " \n"), where);
    return true;
}

/* A file of the grading engine (grader/ of the kit): never the student's,
 * wherever a submission lives. */
static bool engine_file(const char *file, const struct run_options *options)
{
    if (starts_with(file, options->source_root))
        file += strlen(options->source_root);
    return starts_with(file, "grader/");
}

/* "file:line" if it is the student's or a test's, shortened; else false. */
static bool our_file(const char *file, const struct run_options *options, char *out, size_t size)
{
    if (file[0] == '\0' || strchr(file, ':') == NULL)
        return false;
    if (starts_with(file, options->source_root))
        file += strlen(options->source_root);
    else if (starts_with(file, options->student_root))
        ; /* a submission outside the kit: its own path is the clearest name */
    else if (file[0] == '/' || file[0] == '.')
        return false; /* libc, the sanitizer runtime, other system code */
    if (starts_with(file, "grader/") || starts_with(file, "lib/"))
        return false; /* the engine's frames only hide the student's */
    if (starts_with(file, "build/") && strstr(file, "/judged/") != NULL)
        return false; /* a judged chapter's generated calls: the engine's too */
    textf(out, size, "%s", file);
    return true;
}

static const char *plain_name(const char *function);

/* The blocking call a frame is in, by its plain name: glibc's
 * "___pthread_cond_wait", "__pthread_cond_wait_common" and our
 * "__wrap_pthread_cond_wait" are all "pthread_cond_wait". NULL if none. */
static const char *blocking_call(const char *function)
{
    static const char *const calls[] = { "pthread_cond_timedwait", "pthread_cond_clockwait", "pthread_cond_wait",
                                         "pthread_mutex_lock", "pthread_mutex_timedlock", "pthread_join",
                                         "clock_nanosleep", "nanosleep", "sem_wait", "pthread_rwlock_rdlock",
                                         "pthread_rwlock_wrlock", "poll", "read", NULL };
    function = plain_name(function);
    for (int i = 0; calls[i]; i++)
        if (strncmp(function, calls[i], strlen(calls[i])) == 0)
            return calls[i];
    return NULL;
}

/* "___pthread_mutex_lock", "__GI_raise", "__wrap_free" -> the name a student knows. */
static const char *plain_name(const char *function)
{
    while (*function == '_')
        function++;
    if (strncmp(function, "wrap_", 5) == 0 || strncmp(function, "GI_", 3) == 0)
        function += function[0] == 'w' ? 5 : 3;
    while (*function == '_')
        function++;
    return function;
}

/* One thread of a gdb backtrace, as it is read. */
struct thread_summary {
    char name[96];
    char state[96];       /* the blocking call, "crashed in f", or "" */
    char chain[1200];     /* "f (file:line) <- g (file:line)" */
    int frames, named_frames, kept;
    bool crashed;         /* the signal handler frame was seen */
    bool after_signal;    /* frames below it are the faulting ones */
    bool reporter;        /* the thread that ran the test's own check */
    bool harness_seen;    /* a frame of the engine (grader/) came before this one */
    bool unstarted;       /* created on a schedule that had not run it yet: nothing of anyone's */
};

static void add_to_chain(struct thread_summary *thread, const char *text)
{
    if (thread->kept >= MAX_CHAIN || strlen(thread->chain) + strlen(text) + 5 >= sizeof thread->chain)
        return;
    if (thread->chain[0])
        strcat(thread->chain, " <- ");
    strcat(thread->chain, text);
    thread->kept++;
}

static void read_frame(struct thread_summary *thread, const char *line, const struct run_options *options)
{
    char function[128], file[512], ours[512];
    if (!parse_frame(line, function, sizeof function, file, sizeof file))
        return;
    thread->frames++;
    if (strcmp(function, "<signal") == 0) {
        thread->crashed = thread->after_signal = true;
        thread->reporter = false; /* the frames above were the crash report's own */
        thread->chain[0] = thread->state[0] = '\0';
        thread->kept = 0;
        return;
    }
    if (strcmp(function, "??") != 0)
        thread->named_frames++;
    if (strstr(function, "kit_dump_stacks") && !thread->crashed)
        thread->reporter = true;
    if (thread->after_signal && !thread->state[0]) {
        textf(thread->state, sizeof thread->state, "crashed in %s", plain_name(function));
        if (strstr(line, "abort") || strstr(line, "raise"))
            thread->state[0] = '\0'; /* abort()'s own frames: the caller is the news */
    }
    /* A thread parked by the scheduler sleeps on a semaphore of its own:
     * one at its start was never run; one at a switch point waits for its
     * turn, the schedule running one thread at a time. */
    if (!thread->crashed && !thread->chain[0] && !thread->state[0] && strstr(file, "kit_sched.c")) {
        if (strcmp(function, "managed_start") == 0 && !thread->harness_seen)
            thread->unstarted = true;
        else if (strcmp(function, "switch_point") == 0)
            textf(thread->state, sizeof thread->state, "waits for its turn (one thread runs at a time on a schedule)");
    }
    if (engine_file(file, options))
        thread->harness_seen = true;
    /* The blocking call nearest the code that made it names the wait: the
     * wrapper's "pthread_cond_timedwait", not glibc's inner cond_wait, and
     * not the semaphore a thread parked by the scheduler sleeps on. */
    if (!thread->crashed && !thread->chain[0] && blocking_call(function))
        textf(thread->state, sizeof thread->state, "waits in %s", blocking_call(function));
    if (strcmp(function, "main") != 0 && our_file(file, options, ours, sizeof ours)) {
        char text[700];
        textf(text, sizeof text, "%s (%s)", function, ours);
        add_to_chain(thread, text);
    }
}

static void flush_thread(struct thread_summary *thread, enum stacks_view view, char *detail, size_t size, int *shown)
{
    if (!thread->name[0] || (view == CRASHED_THREAD && !thread->crashed) ||
        (view == REPORTING_THREAD && !thread->reporter))
        return;
    if ((strstr(thread->name, "[scheduler]") || thread->unstarted) && !thread->crashed && !thread->reporter)
        return; /* the harness's own thread that runs the schedule, or one not started: nothing of the student's */
    char line[1500];
    if (view == REPORTING_THREAD)
        textf(line, sizeof line, "called from: %s", thread->chain);
    else if (thread->frames > 0 && thread->named_frames == 0)
        textf(line, sizeof line, "  %s: its stack could not be read (no symbols for the program)", thread->name);
    else if (thread->reporter)
        textf(line, sizeof line, "  %s: reporting the failure, from %s", thread->name,
                 thread->chain[0] ? thread->chain : "the harness");
    else if (thread->crashed && strncmp(thread->state, "crashed in ", 11) == 0 &&
             strncmp(thread->chain, thread->state + 11, strlen(thread->state + 11)) == 0 &&
             thread->chain[strlen(thread->state + 11)] == ' ')
        textf(line, sizeof line, "  %s: crashed in %s", thread->name, thread->chain); /* the fault is in our code */
    else
        textf(line, sizeof line, "  %s: %s%s%s", thread->name,
                 thread->state[0] ? thread->state : (view == CRASHED_THREAD ? "crashed" : "running (not in a wait)"),
                 thread->chain[0] ? " <- " : "", thread->chain);
    append_text(detail, size, line);
    (*shown)++;
}

/* 'Thread 3 (Thread 0x7f.. (LWP 12) "consumer-1"):' -> 'thread 3 [consumer-1]' */
static void thread_name(const char *line, char *name, size_t size)
{
    const char *quote = strchr(line, '"');
    int number = atoi(line + 7);
    if (quote)
        textf(name, size, "thread %d [%.*s]", number, (int)strcspn(quote + 1, "\""), quote + 1);
    else
        textf(name, size, "thread %d", number);
}

/* Whether the kernel's Yama module restricts ptrace here (a scope above 0). */
static bool ptrace_restricted(void)
{
    FILE *in = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    int scope = 0;
    if (in != NULL && fscanf(in, "%d", &scope) != 1)
        scope = 0;
    if (in != NULL)
        fclose(in);
    return scope > 0;
}

/* gdb's `thread apply all bt`: one line per thread, where it waits and the
 * student's and the tests' frames below it; for a crash only the thread
 * that took the signal, from the faulting frame down; for a failed check only
 * the chain of calls that led to it. */
void summarise_threads(const char *text, const struct run_options *options, enum stacks_view view, char *detail,
                       size_t size)
{
    struct thread_summary *thread = calloc(1, sizeof *thread);
    int shown = 0;
    for (const char *line = text; thread && line && *line;) {
        const char *end = strchr(line, '\n');
        if (strncmp(line, "Thread ", 7) == 0) {
            flush_thread(thread, view, detail, size, &shown);
            memset(thread, 0, sizeof *thread);
            thread_name(line, thread->name, sizeof thread->name);
        } else if (thread->name[0]) {
            char copy[1024];
            textf(copy, sizeof copy, "%.*s", (int)(end ? end - line : (long)strlen(line)), line);
            read_frame(thread, copy, options);
        }
        line = end ? end + 1 : NULL;
    }
    if (thread)
        flush_thread(thread, view, detail, size, &shown);
    free(thread);
    if (shown == 0 && strstr(text, "ptrace: Operation not permitted") && ptrace_restricted())
        append_text(detail, size, "  (gdb was not allowed to attach: this machine restricts ptrace - see "
                                  "/proc/sys/kernel/yama/ptrace_scope)");
    else if (shown == 0 && strstr(text, "ptrace: Operation not permitted"))
        append_text(detail, size, "  (gdb was not allowed to attach to the process that ran the code)");
    else if (shown == 0)
        append_text(detail, size, "  (gdb could not read the threads' stacks)");
    else if (view == ALL_THREADS && strstr(detail, "waits in pthread_mutex_lock"))
        append_text(detail, size, "  (a thread in pthread_mutex_lock waits for a mutex another thread holds - or "
                                  "one that a function left locked when it returned)");
}

/* ---- ThreadSanitizer ------------------------------------------------------ */

static void remove_text(char *from, size_t length)
{
    memmove(from, from + length, strlen(from + length) + 1);
}

/* Addresses mean nothing to the student: " at 0x7b08..." and " (0x7b08...)" go. */
static void remove_addresses(char *text)
{
    for (char *hex = strstr(text, "0x"); hex; hex = strstr(hex, "0x")) {
        size_t digits = 2 + strspn(hex + 2, "0123456789abcdef");
        if (hex - text >= 4 && strncmp(hex - 4, " at ", 4) == 0)
            remove_text(hex - 4, digits + 4);
        else if (hex - text >= 2 && strncmp(hex - 2, " (", 2) == 0 && hex[digits] == ')')
            remove_text(hex - 2, digits + 3);
        else
            hex += digits;
    }
}

/* "  Write of size 8 at 0x7b08 by thread T2 (mutexes: write M9):" becomes
 * "write of size 8 by thread T2 [consumer-1] (holding M9):"; the names come
 * from the report's "Thread T2 'consumer-1' created by" lines. */
static void race_heading(const char *line, size_t length, const char *report, char *out, size_t size)
{
    char text[400];
    textf(text, sizeof text, "%.*s", (int)(length < 390 ? length : 390), line);
    remove_addresses(text);
    char *tid = strstr(text, "(tid=");  /* "(tid=8462, finished)": the kernel's number means nothing here */
    if (tid && strstr(tid, ", "))
        remove_text(tid + 1, (size_t)(strstr(tid, ", ") + 2 - (tid + 1)));
    for (char *held; (held = strstr(text, "mutexes: write ")) != NULL;)
        memcpy(held, "holding mutex: ", 15);
    char *thread = strstr(text, "thread T");
    if (thread) {
        char key[40], *after = thread + 7 + strcspn(thread + 7, " :,)");
        textf(key, sizeof key, "Thread %.*s '", (int)(after - thread - 7), thread + 7);
        const char *named = strstr(report, key);
        if (named) {
            char rest[400];
            textf(rest, sizeof rest, "%s", after);
            textf(after, sizeof text - (size_t)(after - text), " [%.*s]%s", (int)strcspn(named + strlen(key), "'"),
                  named + strlen(key), rest);
        }
    }
    textf(out, size, "%s", text);
    if (out[0] >= 'A' && out[0] <= 'Z')
        out[0] = (char)(out[0] - 'A' + 'a');
}

struct race_section {
    char heading[500];
    char chain[1500];
    int kept;
    bool skipped; /* a thread's creation stack: its name is in the headings already */
};

static void flush_section(struct race_section *section, char *detail, size_t size)
{
    size_t length = strlen(section->heading);
    if (length > 0 && section->heading[length - 1] != ':' && !section->chain[0]) {
        append_text(detail, size, section->heading); /* a remark, no stack: "mutex M9 is already destroyed." */
    } else if (section->heading[0] && !section->skipped) {
        char line[1600];
        append_text(detail, size, section->heading);
        textf(line, sizeof line, "      %s", section->chain[0] ? section->chain : "(no frame of yours or of the tests)");
        append_text(detail, size, line);
    }
    memset(section, 0, sizeof *section);
}

static void race_frame(struct race_section *section, const char *function, const char *file,
                       const struct run_options *options)
{
    char ours[512];
    size_t used = strlen(section->chain);
    if (section->kept >= MAX_CHAIN || strcmp(function, "main") == 0 || !our_file(file, options, ours, sizeof ours) ||
        used + strlen(function) + strlen(ours) + 10 >= sizeof section->chain)
        return;
    textf(section->chain + used, sizeof section->chain - used, "%s%s (%s)", section->kept ? " <- " : "",
             function, ours);
    section->kept++;
}

/* The first ThreadSanitizer report: what it found, then each access (which
 * is the write, which the earlier read or write, by which thread) with the
 * student's frames, and where the memory came from. */
void summarise_race(const char *log, const struct run_options *options, char *detail, size_t size)
{
    const char *at = strstr(log, "WARNING: ThreadSanitizer: ");
    if (at == NULL)
        return;
    const char *stop = strstr(at, "SUMMARY: ");
    struct race_section section = { 0 };
    char text[1024];
    bool leak = strncmp(at + 26, "thread leak", 11) == 0;
    textf(text, sizeof text, "ThreadSanitizer reports: %.*s%s", (int)strcspn(at + 26, "(\n") - 1, at + 26,
          leak ? " - a thread that had not been joined (nor detached) when the test ended: every thread made must be "
                 "joined, or detached, before the call that should end it returns" : "");
    append_text(detail, size, text);
    for (const char *line = strchr(at, '\n'); line && (!stop || line < stop);) {
        line++;
        const char *end = strchr(line, '\n');
        size_t length = end ? (size_t)(end - line) : strlen(line);
        char function[128], file[512];
        textf(text, sizeof text, "%.*s", (int)(length < 1000 ? length : 1000), line);
        if (parse_frame(text, function, sizeof function, file, sizeof file)) {
            race_frame(&section, function, file, options);
        } else if (length > 2 && line[0] == ' ' && line[2] != ' ') { /* "  Write of size 8 ... by thread T2:" */
            flush_section(&section, detail, size);
            char words[480];
            race_heading(line + 2, length - 2, at, words, sizeof words);
            textf(section.heading, sizeof section.heading, "    %s", words);
            /* a thread's creation stack: skipped, but where the thread leaked */
            section.skipped = strncmp(line + 2, "Thread T", 8) == 0 && !leak;
        }
        line = end;
    }
    flush_section(&section, detail, size);
}
