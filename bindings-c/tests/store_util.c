/* Helpers of the durable-landlord tests (see store_util.h). */
#define _POSIX_C_SOURCE 200809L

#include "store_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

void store_tmpdir(char *buf, size_t buf_len) {
    const char *base = getenv("TMPDIR");
    if (base == NULL || base[0] == '\0') base = "/tmp";
    snprintf(buf, buf_len, "%s/leasehold-c-XXXXXX", base);
    if (mkdtemp(buf) == NULL) {
        perror("mkdtemp");
        abort();
    }
}

void store_rmdir(const char *path) {
    DIR *d = opendir(path);
    if (d == NULL) return;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(path);
}

uint8_t *store_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    size_t cap = 4096, n = 0;
    uint8_t *buf = (uint8_t *)malloc(cap);
    for (;;) {
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (n < cap) break;
        cap *= 2;
        buf = (uint8_t *)realloc(buf, cap);
    }
    fclose(f);
    *len = n;
    return buf;
}

int store_write_file(const char *path, const uint8_t *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (f == NULL) return -1;
    size_t k = len ? fwrite(data, 1, len, f) : 0;
    return (fclose(f) == 0 && k == len) ? 0 : -1;
}

static char last_segment[256];

const char *store_last_segment(const char *dir) {
    DIR *d = opendir(dir);
    if (d == NULL) return NULL;
    struct dirent *e;
    last_segment[0] = '\0';
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "log-", 4) == 0 && strcmp(e->d_name, last_segment) > 0) {
            snprintf(last_segment, sizeof last_segment, "%s", e->d_name);
        }
    }
    closedir(d);
    return last_segment[0] ? last_segment : NULL;
}

int store_segment_count(const char *dir) {
    DIR *d = opendir(dir);
    if (d == NULL) return 0;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL) n += strncmp(e->d_name, "log-", 4) == 0;
    closedir(d);
    return n;
}

uint64_t store_rand(uint64_t *state) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static const uint8_t SEED[LEASEHOLD_SEED_SIZE] = {7, 7, 7, 1, 2, 3};

leasehold_landlord_config *store_config(uint64_t segment_bytes, uint64_t min_compact_bytes) {
    leasehold_landlord_config *cfg = NULL;
    OK(leasehold_landlord_config_new(7, SEED, sizeof SEED, &cfg));
    if (segment_bytes > 0) OK(leasehold_landlord_config_set_store(cfg, segment_bytes, min_compact_bytes));
    return cfg;
}

leasehold_policy *store_policy(void) {
    leasehold_policy *p = NULL;
    OK(leasehold_policy_new_bounded(1000000000, 1000000000, &p));
    return p;
}

leasehold_status store_open(const char *dir, const leasehold_landlord_config *cfg, int64_t now,
                            leasehold_landlord **out, leasehold_recovery *info) {
    leasehold_policy *p = store_policy();
    leasehold_status st = leasehold_landlord_open_dir(dir, strlen(dir), cfg, p, now, out, info);
    leasehold_policy_free(p);
    return st;
}
