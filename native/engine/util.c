/* util.c - fatal errors, allocations and naps (see util.h). */
#include "util.h"

#include "fb_quiesce.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void fb_fatal(const char *fmt, ...)
{
    va_list ap;
    char msg[512];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "fabricbench-mpi: error: %s\n", msg);
    fflush(stderr);
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized)
        MPI_Abort(MPI_COMM_WORLD, FB_EXIT_ERROR);
    exit(FB_EXIT_ERROR);
}

void *fb_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        fb_fatal("out of memory (%zu bytes)", bytes);
    return p;
}

void *fb_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        fb_fatal("out of memory (%zu x %zu bytes)", n, size);
    return p;
}

void fb_nap(void)
{
    struct timespec pause = {0, FB_NAP_NS};
    nanosleep(&pause, NULL);
}

void fb_finalize(void)
{
    if (fb_quiesce_needed())
        fb_quiesce();
    else
        MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
}

static volatile uint64_t chain_sink;

void fb_int_chain(long long steps)
{
    uint64_t x = 0x2545f4914f6cdd1dULL;
    for (long long i = 0; i < steps; i++)
        x = x * 0x9e3779b97f4a7c15ULL + (x >> 29);
    chain_sink = x;
}

void fb_print_wrapped(FILE *f, const char *text, int col, int indent)
{
    const char *gap = " \n";
    int first = 1;
    while (*text) {
        text += strspn(text, gap);
        int n = (int)strcspn(text, gap);
        if (n == 0)
            break;
        if (!first && col + 1 + n > 80) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (!first) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", n, text);
        col += n;
        text += n;
        first = 0;
    }
    fputc('\n', f);
}
