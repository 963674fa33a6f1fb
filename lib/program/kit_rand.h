/**
 * @file kit_rand.h
 * @brief A small seeded random generator: the same seed gives the same run.
 *
 * Programs and stress tests draw delays and failures from a kit_rng_t seeded
 * from `--seed` or `SEED=`, one generator per thread (seeded from the run's
 * seed and the thread's index), so a failing run can be replayed. The
 * generator is SplitMix64: tiny, fast, and good enough for jitter.
 *
 * @ingroup kit
 */
#ifndef KIT_RAND_H
#define KIT_RAND_H

#include <stdint.h>

/** @addtogroup kit
 *  @{ */

/** @brief Generator state; one per thread, never shared. */
typedef struct kit_rng {
    uint64_t state; /**< advances by a constant on every draw */
} kit_rng_t;

/** @brief Seed @p rng from a run seed and a stream number (e.g. the thread's index). */
static inline void kit_rng_seed(kit_rng_t *rng, uint64_t seed, uint64_t stream)
{
    rng->state = seed ^ (stream * 0x9E3779B97F4A7C15ULL) ^ 0xD1B54A32D192ED03ULL;
}

/** @brief The next 64 random bits. */
static inline uint64_t kit_rng_next(kit_rng_t *rng)
{
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/** @brief A number in [0, bound); 0 when @p bound is 0. */
static inline uint64_t kit_rng_below(kit_rng_t *rng, uint64_t bound)
{
    return bound == 0 ? 0 : kit_rng_next(rng) % bound;
}

/** @} */
#endif
