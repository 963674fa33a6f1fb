/**
 * @file main.c
 * @brief Chapter 01 program: the source document's producers and consumer, replayed.
 *
 * Four producers "download" a page (a simulated delay), then put a message
 * holding the number of lines they got into a queue of capacity 2; one
 * consumer takes the messages and "processes" them. With the default
 * delays the producers finish together, the queue fills, and the trace shows
 * the late producers waiting and being released one by one as the
 * consumer makes room - the document's "peak shaving".
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kit_cli.h"
#include "kit_errno.h"
#include "kit_log.h"
#include "kit_rand.h"
#include "kit_thread.h"
#include "kit_time.h"
#include "kit_trace.h"
#include "msgq.h"

static long producers = 4, consumers = 1, capacity = 2, items = 1;
static long download_ms = 1000, consume_ms = 300;
static kit_list_t delays; /* per-producer download time, overrides --download-ms */
static kit_run_t run;

static const kit_opt_t options[] = {
    { "producers", KIT_OPT_LONG, "N", "producer threads", &producers, 1, 64, NULL },
    { "consumers", KIT_OPT_LONG, "N", "consumer threads", &consumers, 1, 64, NULL },
    { "capacity", KIT_OPT_LONG, "N", "queue capacity", &capacity, 1, 1000000, NULL },
    { "items", KIT_OPT_LONG, "N", "messages each producer puts", &items, 1, 1000000, NULL },
    { "download-ms", KIT_OPT_LONG, "MS", "simulated download time before each put", &download_ms, 0, 60000, NULL },
    { "delays", KIT_OPT_LIST, "MS,MS,...", "download time of producer 0, 1, ... (scripts an interleaving)",
      &delays, 0, 60000, NULL },
    { "consume-ms", KIT_OPT_LONG, "MS", "simulated processing time per message", &consume_ms, 0, 60000, NULL },
    KIT_RUN_OPTIONS(run),
};

static const kit_cli_t cli = {
    "ch01-monitor-queue",
    "Producers put messages into a bounded monitor queue (one mutex, one condition\n"
    "  variable, broadcast); consumers take them. Watch who waits, and who wakes whom.",
    "examples:\n"
    "  ch01-monitor-queue --capacity 1 --consume-ms 500\n"
    "  ch01-monitor-queue --delays 0,0,2000,4000     # producers 2 and 3 arrive late\n"
    "  ch01-monitor-queue --producers 8 --consumers 3 --items 1000 --download-ms 0 --quiet",
    options, sizeof options / sizeof options[0],
};

static msgq_t *queue;
static uint64_t seed;
static atomic_long sent, received;


static long delay_for(int producer)
{
    return (size_t)producer < delays.count ? delays.values[producer] : download_ms;
}

static void *produce(void *raw)
{
    int index = (int)(intptr_t)raw;
    kit_rng_t rng;
    kit_rng_seed(&rng, seed, (uint64_t)index);
    for (long n = 0; n < items; n++) {
        int id = (int)(index * items + n);
        kit_log("producer", "download...");
        kit_trace_begin("producer", "downloading %d", id);
        kit_sleep_ms(delay_for(index));
        kit_trace_end("producer");
        int *lines = malloc(sizeof *lines); /* the message body: owned by the queue once put */
        *lines = 1 + (int)kit_rng_below(&rng, 5);
        kit_log("producer", "try put message(%d)", id);
        int err = msgq_put(queue, (msg_t){ .id = id, .body = lines });
        if (err != 0) {
            kit_log("producer", "put message(%d) failed: %s", id, kit_errno_name(err));
            free(lines); /* not accepted: still ours */
            continue;
        }
        atomic_fetch_add(&sent, 1);
    }
    return NULL;
}

static void *consume(void *raw)
{
    (void)raw;
    msg_t msg;
    while (msgq_take(queue, &msg) == 0) {
        int *lines = msg.body;
        kit_log("consumer", "take message(%d): [%d] lines", msg.id, *lines);
        free(lines);
        atomic_fetch_add(&received, 1);
        kit_trace_begin("consumer", "processing %d", msg.id);
        kit_sleep_ms(consume_ms);
        kit_trace_end("consumer");
    }
    kit_log("consumer", "queue closed and empty, leaving");
    return NULL;
}

int main(int argc, char **argv)
{
    kit_cli_parse(&cli, argc, argv);
    seed = kit_run_begin(&run);
    int err = msgq_create(&queue, (size_t)capacity);
    if (err != 0) {
        fprintf(stderr, "msgq_create: %s%s\n", kit_errno_name(err),
                err == ENOSYS ? " - not implemented yet: write exercises/01-monitor-queue/msgq.c" : "");
        return 1;
    }
    kit_log("main", "%ld producers, %ld consumer(s), capacity %ld, %ld message(s) each", producers, consumers,
            capacity, items);
    pthread_t *consumer_threads = kit_run_start_group((size_t)consumers, "consumer", consume);
    pthread_t *producer_threads = kit_run_start_group((size_t)producers, "producer", produce);
    kit_run_join_group(producer_threads, (size_t)producers);
    kit_log("main", "all producers done: closing the queue");
    msgq_close(queue); /* consumers take what is left, then get ECANCELED */
    kit_run_join_group(consumer_threads, (size_t)consumers);
    msgq_destroy(queue);
    int failed = kit_run_end(&run);

    long expected = producers * items;
    printf("\nsent %ld, received %ld of %ld: %s (seed %lu)\n", atomic_load(&sent), atomic_load(&received), expected,
           atomic_load(&sent) == expected && atomic_load(&received) == expected ? "nothing lost" : "MESSAGES LOST",
           (unsigned long)seed);
    return atomic_load(&received) == expected && !failed ? 0 : 1;
}
