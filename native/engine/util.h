/* util.h - what every other engine file may use and that uses nothing of the engine: a
 * fatal error that takes the whole job down, allocations that cannot return NULL, a
 * fixed chain of integer work, a short nap for ranks that wait without spinning, and help
 * text that fits 80 columns. */
#ifndef FB_UTIL_H
#define FB_UTIL_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

enum { FB_EXIT_OK = 0, FB_EXIT_ERROR = 1, FB_EXIT_USAGE = 2, FB_EXIT_VALIDATION = 3 };

/* Prints "fabricbench-mpi: error: ..." and aborts every rank with status 1. */
void fb_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void *fb_malloc(size_t bytes);   /* never NULL: aborts the job when memory runs out */
void *fb_calloc(size_t n, size_t size);

/* A chain of `steps` multiplies and shifts, each needing the last: no vector unit, no
 * memory, no closed form, so its time is the core's clock and whatever shares the core
 * (the host probe's integer chain, the exchange benchmark's fixed computation). */
void fb_int_chain(long long steps);

/* Sleeps FB_NAP_NS: how long a rank with nothing to do waits between polls. */
#define FB_NAP_NS 20000
void fb_nap(void);

/* Every rank's way out after MPI_Init, all ranks at the same point: MPI_Finalize after a
 * barrier, or after fb_quiesce where MPICH over UCX needs it (native/common/fb_quiesce.c). */
void fb_finalize(void);

/* Prints text to f starting at column `col`, breaking between words (a '\n' in text is a
 * space) so that no line passes column 80; continuation lines start at column `indent`. */
void fb_print_wrapped(FILE *f, const char *text, int col, int indent);

/* splitmix64: a small, well-mixed generator for reproducible draws from a seed. */
static inline uint64_t fb_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#endif
