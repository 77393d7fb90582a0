/* json.h - a small writer that builds one JSON value (one record) in a growable buffer.
 *
 * Members are added with a key (inside an object) or with key == NULL (inside an array).
 * A "members" fragment is an object body without braces; it is spliced into another
 * object with fb_json_splice(), which is how benchmarks hand over params and detail. */
#ifndef FB_JSON_H
#define FB_JSON_H

#include <stddef.h>

#define FB_JSON_MAX_DEPTH 32

typedef struct {
    char *buf;
    size_t len, cap;
    int depth;
    unsigned char first[FB_JSON_MAX_DEPTH]; /* 1 while no member was written at that level */
} fb_json;

void fb_json_init(fb_json *j);          /* an empty document */
void fb_json_init_members(fb_json *j);  /* an object body: members only, no braces */
void fb_json_free(fb_json *j);

void fb_json_open(fb_json *j, const char *key);
void fb_json_close(fb_json *j);
void fb_json_open_array(fb_json *j, const char *key);
void fb_json_close_array(fb_json *j);

void fb_json_str(fb_json *j, const char *key, const char *value);
void fb_json_int(fb_json *j, const char *key, long long value);
void fb_json_num(fb_json *j, const char *key, double value);
void fb_json_bool(fb_json *j, const char *key, int value);
void fb_json_null(fb_json *j, const char *key);
void fb_json_splice(fb_json *j, const fb_json *members);

#endif
