/* A tiny JSON reader for the shared test vectors: parses a whole document into a tree.
 * Numbers keep their text; strings are decoded to UTF-8 (with their length, NULs allowed). */
#ifndef LEASEHOLD_TEST_JSON_H
#define LEASEHOLD_TEST_JSON_H

#include <stddef.h>

typedef enum { J_NULL, J_BOOL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT } json_kind;

typedef struct json {
    json_kind kind;
    int boolean;
    char *text;         /* number text or decoded string, NUL-terminated */
    size_t len;         /* length of text */
    struct json **items; /* array elements or object values */
    char **keys;        /* object keys */
    size_t count;
} json;

/* Parses `len` bytes; NULL on malformed input. Free with json_free. */
json *json_parse(const char *s, size_t len);
/* Reads a whole file and parses it; NULL if unreadable or malformed. */
json *json_parse_file(const char *path);
void json_free(json *v);

/* Member `key` of an object, or NULL. */
const json *json_get(const json *obj, const char *key);
/* The string member `key`, or NULL if absent or not a string. */
const char *json_str(const json *obj, const char *key);
/* Deep equality; object members compare regardless of order. */
int json_equal(const json *a, const json *b);

#endif
