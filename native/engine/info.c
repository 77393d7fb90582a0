/* info.c - who is running: one rank_info record per rank (host, pid, MPI library,
 * timer), gathered on rank 0 and printed in rank order. Measures nothing else.
 *
 * timer_resolution_us is MPI_Wtick; timer_measured_resolution_us is the smallest
 * step seen between consecutive MPI_Wtime calls on that rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fabricbench.h"
#include "json.h"
#include "output.h"

typedef struct {
    char host[FB_HOST_MAX];
    char library[1024];
    char version[16];
    double wtick_us, resolution_us, overhead_us;
    long long pid;
} rank_facts;

void fb_run_info(fb_ctx *ctx)
{
    rank_facts mine;
    memset(&mine, 0, sizeof mine);
    snprintf(mine.host, sizeof mine.host, "%s", ctx->host);
    snprintf(mine.library, sizeof mine.library, "%s", ctx->mpi_library_full);
    snprintf(mine.version, sizeof mine.version, "%s", ctx->mpi_version);
    mine.wtick_us = ctx->wtick_us;
    mine.resolution_us = ctx->timer_resolution_us;
    mine.overhead_us = ctx->timer_overhead_us;
    mine.pid = (long long)getpid();

    rank_facts *all = ctx->rank == 0 ? fb_malloc((size_t)ctx->np * sizeof *all) : NULL;
    MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (ctx->rank != 0)
        return;

    if (ctx->opt.format == FB_FORMAT_TABLE)
        fb_output_text("# Rank  Host                      PID  Timer resolution(us)  MPI library\n");
    for (int r = 0; r < ctx->np; r++) {
        rank_facts *f = &all[r];
        char first_line[sizeof f->library];
        snprintf(first_line, sizeof first_line, "%s", f->library);
        first_line[strcspn(first_line, "\r\n")] = '\0';
        if (ctx->opt.format == FB_FORMAT_TABLE) {
            char row[sizeof first_line + 512];
            snprintf(row, sizeof row, "%-7d %-20s %8lld %21.3g  %s\n", r, f->host, f->pid, f->wtick_us,
                     first_line);
            fb_output_text(row);
            continue;
        }
        fb_json j;
        fb_record_begin(&j, "rank_info");
        fb_json_int(&j, "rank", r);
        fb_json_str(&j, "host", f->host);
        fb_json_int(&j, "pid", f->pid);
        fb_json_str(&j, "mpi_library", first_line);
        fb_json_str(&j, "mpi_library_full", f->library);
        fb_json_str(&j, "mpi_version", f->version);
        fb_json_num(&j, "timer_resolution_us", f->wtick_us);
        fb_json_str(&j, "timer_resolution_source", "MPI_Wtick");
        fb_json_num(&j, "timer_measured_resolution_us", f->resolution_us);
        fb_json_num(&j, "timer_overhead_us", f->overhead_us);
        fb_record_write(&j);
    }
    free(all);
}
