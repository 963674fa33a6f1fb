/* Attack: macros that expand to 2^40 tokens: a preprocessor that runs for
 *         hours, unless the build has a time limit.
 * Expect: zero
 */
#define A0 x x
#define A1 A0 A0
#define A2 A1 A1
#define A3 A2 A2
#define A4 A3 A3
#define A5 A4 A4
#define A6 A5 A5
#define A7 A6 A6
#define A8 A7 A7
#define A9 A8 A8
#define B0 A9 A9 A9 A9 A9 A9 A9 A9
#define B1 B0 B0 B0 B0 B0 B0 B0 B0
#define B2 B1 B1 B1 B1 B1 B1 B1 B1
#define B3 B2 B2 B2 B2 B2 B2 B2 B2
#define B4 B3 B3 B3 B3 B3 B3 B3 B3
#define B5 B4 B4 B4 B4 B4 B4 B4 B4
#define B6 B5 B5 B5 B5 B5 B5 B5 B5
#define B7 B6 B6 B6 B6 B6 B6 B6 B6
#define B8 B7 B7 B7 B7 B7 B7 B7 B7
#define B9 B8 B8 B8 B8 B8 B8 B8 B8
static const char *never = #B9;
