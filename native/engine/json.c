/* json.c - the JSON record writer (see json.h). Output is plain ASCII: bytes outside
 * printable ASCII are escaped or replaced, so every line is valid UTF-8 JSON. */
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void reserve(fb_json *j, size_t extra)
{
    if (j->len + extra + 1 <= j->cap)
        return;
    size_t cap = j->cap ? j->cap : 256;
    while (cap < j->len + extra + 1)
        cap *= 2;
    char *grown = realloc(j->buf, cap);
    if (!grown) {
        fputs("fabricbench-mpi: error: out of memory building a record\n", stderr);
        abort();
    }
    j->buf = grown;
    j->cap = cap;
}

static void put(fb_json *j, const char *s, size_t n)
{
    reserve(j, n);
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void puts_(fb_json *j, const char *s) { put(j, s, strlen(s)); }

static void put_string(fb_json *j, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    put(j, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char esc[2] = {'\\', (char)*p};
            put(j, esc, 2);
        } else if (*p == '\n') {
            put(j, "\\n", 2);
        } else if (*p == '\t') {
            put(j, "\\t", 2);
        } else if (*p < 0x20) {
            char esc[6] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]};
            put(j, esc, 6);
        } else if (*p >= 0x7f) {
            put(j, "?", 1); /* never emit invalid UTF-8 */
        } else {
            put(j, (const char *)p, 1);
        }
    }
    put(j, "\"", 1);
}

/* Comma and key before a new member or element. */
static void begin_member(fb_json *j, const char *key)
{
    if (j->depth > 0) {
        if (!j->first[j->depth])
            put(j, ",", 1);
        j->first[j->depth] = 0;
    }
    if (key) {
        put_string(j, key);
        put(j, ":", 1);
    }
}

void fb_json_init(fb_json *j)
{
    memset(j, 0, sizeof *j);
    reserve(j, 0);
    j->buf[0] = '\0';
}

void fb_json_init_members(fb_json *j)
{
    fb_json_init(j);
    j->depth = 1;
    j->first[1] = 1;
}

void fb_json_free(fb_json *j)
{
    free(j->buf);
    memset(j, 0, sizeof *j);
}

static void open_container(fb_json *j, const char *key, const char *bracket)
{
    begin_member(j, key);
    puts_(j, bracket);
    if (j->depth + 1 >= FB_JSON_MAX_DEPTH) {
        fputs("fabricbench-mpi: error: record nested too deeply\n", stderr);
        abort();
    }
    j->depth++;
    j->first[j->depth] = 1;
}

void fb_json_open(fb_json *j, const char *key) { open_container(j, key, "{"); }
void fb_json_open_array(fb_json *j, const char *key) { open_container(j, key, "["); }

void fb_json_close(fb_json *j)
{
    j->depth--;
    put(j, "}", 1);
}

void fb_json_close_array(fb_json *j)
{
    j->depth--;
    put(j, "]", 1);
}

void fb_json_str(fb_json *j, const char *key, const char *value)
{
    begin_member(j, key);
    put_string(j, value ? value : "");
}

void fb_json_int(fb_json *j, const char *key, long long value)
{
    char text[32];
    begin_member(j, key);
    snprintf(text, sizeof text, "%lld", value);
    puts_(j, text);
}

void fb_json_num(fb_json *j, const char *key, double value)
{
    char text[40];
    begin_member(j, key);
    if (!isfinite(value)) { /* JSON has no NaN or Inf; the caller should not produce them */
        puts_(j, "null");
        return;
    }
    snprintf(text, sizeof text, "%.12g", value);
    puts_(j, text);
}

void fb_json_bool(fb_json *j, const char *key, int value)
{
    begin_member(j, key);
    puts_(j, value ? "true" : "false");
}

void fb_json_null(fb_json *j, const char *key)
{
    begin_member(j, key);
    puts_(j, "null");
}

void fb_json_splice(fb_json *j, const fb_json *members)
{
    if (!members || members->len == 0)
        return;
    begin_member(j, NULL);
    put(j, members->buf, members->len);
}
