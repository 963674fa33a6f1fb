/**
 * @file kit_cli.c
 * @brief Table-driven option parsing with strict numbers, and the shared run options.
 */
#define _POSIX_C_SOURCE 200809L
#include "kit_cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kit_log.h"
#include "kit_thread.h"
#include "kit_time.h"
#include "kit_timeline.h"
#include "kit_trace.h"

static void print_default(const kit_opt_t *opt, FILE *out)
{
    if (opt->kind == KIT_OPT_LONG) {
        fprintf(out, " (%ld..%ld, default %ld)", opt->min, opt->max, *(long *)opt->target);
    } else if (opt->kind == KIT_OPT_CHOICE) {
        fputs(" (", out);
        for (const char *const *c = opt->choices; *c; c++)
            fprintf(out, "%s%s", c == opt->choices ? "" : "|", *c);
        fprintf(out, ", default %s)", *(const char **)opt->target);
    } else if (opt->kind == KIT_OPT_LIST) {
        fprintf(out, " (each %ld..%ld)", opt->min, opt->max);
    }
}

/* The usage, to out: stdout for --help, stderr for errors. */
static void print_usage(const kit_cli_t *cli, FILE *out)
{
    fprintf(out, "usage: %s [options]\n  %s\n\noptions:\n", cli->program, cli->summary);
    for (size_t i = 0; i < cli->option_count; i++) {
        const kit_opt_t *opt = &cli->options[i];
        char head[48];
        snprintf(head, sizeof head, "--%s%s%s", opt->name, opt->metavar ? " " : "",
                 opt->metavar ? opt->metavar : "");
        fprintf(out, "  %-22s %s", head, opt->help);
        print_default(opt, out);
        fputc('\n', out);
    }
    fprintf(out, "  %-22s %s\n", "--help", "show this help and exit");
    fputs("\nexit status: 0 when the run went as it should; 1 when a call failed (ENOSYS: that\n"
          "exercise is not written yet) or a check of the run failed; 2 for a bad option.\n", out);
    if (cli->examples)
        fprintf(out, "\n%s\n", cli->examples);
}

void kit_cli_fail(const kit_cli_t *cli, const char *fmt, ...)
{
    va_list args;
    fprintf(stderr, "%s: error: ", cli->program);
    va_start(args, fmt);
    vfprintf(stderr, fmt, args);
    va_end(args);
    fputs("\n\n", stderr);
    print_usage(cli, stderr);
    exit(2);
}

/* Whole-string integer parse: "12abc", "", " 7" and out-of-range values fail. */
static bool parse_long(const char *text, long min, long max, long *out)
{
    if (text[0] == '\0' || text[0] == ' ' || text[0] == '+')
        return false;
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || value < min || value > max)
        return false;
    *out = value;
    return true;
}

static bool parse_list(const char *text, const kit_opt_t *opt, kit_list_t *list)
{
    char copy[1024];
    if (strlen(text) >= sizeof copy)
        return false;
    strcpy(copy, text);
    list->count = 0;
    char *saveptr = NULL;
    for (char *item = strtok_r(copy, ",", &saveptr); item; item = strtok_r(NULL, ",", &saveptr)) {
        if (list->count == KIT_LIST_MAX || !parse_long(item, opt->min, opt->max, &list->values[list->count]))
            return false;
        list->count++;
    }
    /* "1,,2" or a trailing comma: strtok skips empty fields, count them instead */
    size_t commas = 0;
    for (const char *c = text; *c; c++)
        commas += *c == ',';
    return list->count > 0 && list->count == commas + 1;
}

static void take_value(const kit_cli_t *cli, const kit_opt_t *opt, const char *value)
{
    bool ok = true;
    switch (opt->kind) {
    case KIT_OPT_LONG:
        ok = parse_long(value, opt->min, opt->max, (long *)opt->target);
        if (!ok)
            kit_cli_fail(cli, "--%s: expected a whole number in %ld..%ld, got '%s'", opt->name,
                         opt->min, opt->max, value);
        break;
    case KIT_OPT_LIST:
        ok = parse_list(value, opt, (kit_list_t *)opt->target);
        if (!ok)
            kit_cli_fail(cli, "--%s: expected up to %d comma-separated numbers in %ld..%ld, got '%s'",
                         opt->name, KIT_LIST_MAX, opt->min, opt->max, value);
        break;
    case KIT_OPT_CHOICE:
        ok = false;
        for (const char *const *c = opt->choices; *c && !ok; c++)
            ok = strcmp(*c, value) == 0;
        if (!ok)
            kit_cli_fail(cli, "--%s: '%s' is not one of the choices below", opt->name, value);
        *(const char **)opt->target = value;
        break;
    case KIT_OPT_STRING:
        if (value[0] == '\0')
            kit_cli_fail(cli, "--%s: the value must not be empty", opt->name);
        *(const char **)opt->target = value;
        break;
    case KIT_OPT_FLAG:
        break;
    }
}

static const kit_opt_t *find_option(const kit_cli_t *cli, const char *name, size_t length)
{
    for (size_t i = 0; i < cli->option_count; i++)
        if (strlen(cli->options[i].name) == length && strncmp(cli->options[i].name, name, length) == 0)
            return &cli->options[i];
    return NULL;
}

void kit_cli_parse(const kit_cli_t *cli, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_usage(cli, stdout);
            exit(0);
        }
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
            kit_cli_fail(cli, "unexpected argument '%s'", arg);
        const char *name = arg + 2;
        const char *equals = strchr(name, '=');
        size_t length = equals ? (size_t)(equals - name) : strlen(name);
        const kit_opt_t *opt = find_option(cli, name, length);
        if (opt == NULL)
            kit_cli_fail(cli, "unknown option '%.*s'", (int)(length + 2), arg);
        if (opt->kind == KIT_OPT_FLAG) {
            if (equals)
                kit_cli_fail(cli, "--%s takes no value", opt->name);
            *(bool *)opt->target = true;
            continue;
        }
        const char *value = equals ? equals + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (value == NULL)
            kit_cli_fail(cli, "--%s needs a value (%s)", opt->name, opt->metavar ? opt->metavar : "VALUE");
        take_value(cli, opt, value);
    }
}

pthread_t *kit_run_start_group(size_t count, const char *role, void *(*fn)(void *))
{
    pthread_t *threads = calloc(count ? count : 1, sizeof *threads);
    int err = threads ? kit_thread_start_group(threads, count, role, fn, NULL, 0) : ENOMEM;
    if (err != 0) {
        fprintf(stderr, "cannot start the %s threads: %s\n", role, strerror(err));
        exit(1);
    }
    return threads;
}

void kit_run_join_group(pthread_t *threads, size_t count)
{
    kit_thread_join_group(threads, count);
    free(threads);
}

uint64_t kit_run_begin(kit_run_t *run)
{
    kit_thread_set_name("main");
    if (!run->quiet)
        kit_log_to(stdout);
    if (run->trace_path || run->timeline_path)
        kit_trace_start();
    if (run->seed == 0)
        run->seed = (long)(kit_now_ns() % 2147483647L) + 1;
    return (uint64_t)run->seed;
}

static int write_file(const char *what, const char *path, int (*writer)(const char *))
{
    int err = writer(path);
    if (err != 0) {
        fprintf(stderr, "cannot write %s %s: %s\n", what, path, strerror(err));
        return 1;
    }
    printf("%s written to %s\n", what, path);
    return 0;
}

int kit_run_end(const kit_run_t *run)
{
    int failed = 0;
    kit_log_to(NULL);
    if (run->trace_path)
        failed |= write_file("trace", run->trace_path, kit_trace_write_json);
    if (run->timeline_path)
        failed |= write_file("timeline", run->timeline_path, kit_timeline_write_svg);
    kit_trace_reset();
    return failed;
}
