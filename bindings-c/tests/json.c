/* A tiny JSON reader for the shared test vectors (see json.h). */
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *s;
    size_t len, at;
    int depth;
} parser;

static void ws(parser *p) {
    while (p->at < p->len && (p->s[p->at] == ' ' || p->s[p->at] == '\n' || p->s[p->at] == '\r' ||
                              p->s[p->at] == '\t'))
        p->at++;
}

static json *node(json_kind k) {
    json *v = (json *)calloc(1, sizeof *v);
    if (v) v->kind = k;
    return v;
}

static int hex4(parser *p, unsigned *out) {
    if (p->len - p->at < 4) return 0;
    unsigned x = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->at++];
        x <<= 4;
        if (c >= '0' && c <= '9') x |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') x |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') x |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = x;
    return 1;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F)); return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F)); return 4;
}

/* Parses a string at p->at (which is at the opening quote) into a malloc'd buffer. */
static char *string(parser *p, size_t *out_len) {
    p->at++; /* opening quote */
    char *o = (char *)malloc(p->len - p->at + 1); /* decoded is never longer than encoded */
    if (!o) return NULL;
    size_t n = 0;
    while (p->at < p->len && p->s[p->at] != '"') {
        char c = p->s[p->at++];
        if (c != '\\') { o[n++] = c; continue; }
        if (p->at >= p->len) break;
        char e = p->s[p->at++];
        switch (e) {
        case '"': o[n++] = '"'; break;
        case '\\': o[n++] = '\\'; break;
        case '/': o[n++] = '/'; break;
        case 'b': o[n++] = '\b'; break;
        case 'f': o[n++] = '\f'; break;
        case 'n': o[n++] = '\n'; break;
        case 'r': o[n++] = '\r'; break;
        case 't': o[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (!hex4(p, &cp)) { free(o); return NULL; }
            if (cp >= 0xD800 && cp < 0xDC00 && p->len - p->at >= 6 && p->s[p->at] == '\\' &&
                p->s[p->at + 1] == 'u') {
                unsigned lo;
                p->at += 2;
                if (!hex4(p, &lo)) { free(o); return NULL; }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            n += put_utf8(o + n, cp);
            break;
        }
        default: free(o); return NULL;
        }
    }
    if (p->at >= p->len) { free(o); return NULL; }
    p->at++; /* closing quote */
    o[n] = '\0';
    *out_len = n;
    return o;
}

static json *value(parser *p);

static int push(json *v, json *item, char *key) {
    json **items = (json **)realloc(v->items, (v->count + 1) * sizeof *items);
    if (!items) return 0;
    v->items = items;
    if (v->kind == J_OBJECT) {
        char **keys = (char **)realloc(v->keys, (v->count + 1) * sizeof *keys);
        if (!keys) return 0;
        v->keys = keys;
        v->keys[v->count] = key;
    }
    v->items[v->count++] = item;
    return 1;
}

static json *container(parser *p, json_kind k) {
    char close = k == J_ARRAY ? ']' : '}';
    json *v = node(k);
    if (!v || ++p->depth > 64) { json_free(v); return NULL; }
    p->at++;
    ws(p);
    if (p->at < p->len && p->s[p->at] == close) { p->at++; p->depth--; return v; }
    for (;;) {
        char *key = NULL;
        if (k == J_OBJECT) {
            size_t kl;
            ws(p);
            if (p->at >= p->len || p->s[p->at] != '"' || !(key = string(p, &kl))) break;
            ws(p);
            if (p->at >= p->len || p->s[p->at] != ':') { free(key); break; }
            p->at++;
        }
        json *item = value(p);
        if (!item || !push(v, item, key)) { free(key); json_free(item); break; }
        ws(p);
        if (p->at < p->len && p->s[p->at] == ',') { p->at++; continue; }
        if (p->at < p->len && p->s[p->at] == close) { p->at++; p->depth--; return v; }
        break;
    }
    json_free(v);
    return NULL;
}

static json *value(parser *p) {
    ws(p);
    if (p->at >= p->len) return NULL;
    char c = p->s[p->at];
    if (c == '{') return container(p, J_OBJECT);
    if (c == '[') return container(p, J_ARRAY);
    if (c == '"') {
        json *v = node(J_STRING);
        if (v && !(v->text = string(p, &v->len))) { json_free(v); return NULL; }
        return v;
    }
    if (p->len - p->at >= 4 && memcmp(p->s + p->at, "null", 4) == 0) { p->at += 4; return node(J_NULL); }
    if (p->len - p->at >= 4 && memcmp(p->s + p->at, "true", 4) == 0) {
        p->at += 4;
        json *v = node(J_BOOL);
        if (v) v->boolean = 1;
        return v;
    }
    if (p->len - p->at >= 5 && memcmp(p->s + p->at, "false", 5) == 0) { p->at += 5; return node(J_BOOL); }
    size_t start = p->at;
    while (p->at < p->len && strchr("-+.0123456789eE", p->s[p->at]) != NULL) p->at++;
    if (p->at == start) return NULL;
    json *v = node(J_NUMBER);
    if (!v) return NULL;
    v->len = p->at - start;
    v->text = (char *)malloc(v->len + 1);
    if (!v->text) { json_free(v); return NULL; }
    memcpy(v->text, p->s + start, v->len);
    v->text[v->len] = '\0';
    return v;
}

json *json_parse(const char *s, size_t len) {
    parser p = {s, len, 0, 0};
    json *v = value(&p);
    ws(&p);
    if (v && p.at != len) { json_free(v); return NULL; }
    return v;
}

json *json_parse_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = (char *)malloc(cap);
    while (buf) {
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (n < cap) break;
        char *bigger = (char *)realloc(buf, cap * 2);
        if (!bigger) { free(buf); buf = NULL; break; }
        buf = bigger;
        cap *= 2;
    }
    fclose(f);
    if (!buf) return NULL;
    json *v = json_parse(buf, n);
    free(buf);
    return v;
}

void json_free(json *v) {
    if (!v) return;
    for (size_t i = 0; i < v->count; i++) {
        json_free(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->text);
    free(v);
}

const json *json_get(const json *obj, const char *key) {
    if (!obj || obj->kind != J_OBJECT) return NULL;
    for (size_t i = 0; i < obj->count; i++)
        if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
    return NULL;
}

const char *json_str(const json *obj, const char *key) {
    const json *v = json_get(obj, key);
    return v && v->kind == J_STRING ? v->text : NULL;
}

int json_equal(const json *a, const json *b) {
    if (!a || !b || a->kind != b->kind || a->count != b->count) return 0;
    switch (a->kind) {
    case J_NULL: return 1;
    case J_BOOL: return a->boolean == b->boolean;
    case J_NUMBER:
    case J_STRING: return a->len == b->len && memcmp(a->text, b->text, a->len) == 0;
    case J_ARRAY:
        for (size_t i = 0; i < a->count; i++)
            if (!json_equal(a->items[i], b->items[i])) return 0;
        return 1;
    case J_OBJECT:
        for (size_t i = 0; i < a->count; i++)
            if (!json_equal(a->items[i], json_get(b, a->keys[i]))) return 0;
        return 1;
    }
    return 0;
}
