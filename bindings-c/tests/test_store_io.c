/* A host with its own storage (issue 14, item 4, for C): the store's file operations carried
 * out by leasehold_store_io callbacks on an in-memory "disk" that keeps what was synced and
 * loses, on a simulated crash, what was not (or keeps part of it: a torn write). A seeded random
 * run of grants, renewals, cancels and commits, with writes that fail at random operations and
 * crashes after them, checks after every reopen that every acknowledged grant is there, every
 * acknowledged cancel stays cancelled, and nothing never handed to the disk appears. Then the
 * callbacks' re-entrancy: a callback that changes the landlord, commits (BUSY) or frees it. */
#include <stdlib.h>

#include "check.h"
#include "store_util.h"

/* ---------- the disk ---------- */

enum { MAX_FILES = 64 };

struct mem_file {
    char name[40];
    uint8_t *data;
    size_t len, synced;
};

struct disk {
    struct mem_file files[MAX_FILES];
    int n;
    uint64_t rng;
    /* Fail the operation this many operations from now (0: never). */
    int fail_in;
    int appends, syncs, replaces, truncates, removes, failures;
    /* Re-entrancy: what a callback does to `ll`. */
    leasehold_landlord *ll;
    enum { RE_NONE, RE_GRANT_AND_COMMIT, RE_FREE_IN_APPEND, RE_FREE_IN_SYNC } reenter;
    leasehold_status reentrant_grant, reentrant_commit;
};

static struct mem_file *lookup(struct disk *d, const char *name, bool create) {
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->files[i].name, name) == 0) return &d->files[i];
    if (!create || d->n == MAX_FILES) return NULL;
    struct mem_file *f = &d->files[d->n++];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    return f;
}

static void put(struct mem_file *f, const uint8_t *data, size_t len) {
    f->data = (uint8_t *)realloc(f->data, f->len + len + 1);
    if (len) memcpy(f->data + f->len, data, len);
    f->len += len;
}

/* Counts an operation down to the injected failure. */
static bool fails_now(struct disk *d) {
    if (d->fail_in > 0 && --d->fail_in == 0) {
        d->failures++;
        return true;
    }
    return false;
}

static int32_t d_append(void *user_data, const char *file, const uint8_t *data, size_t len) {
    struct disk *d = (struct disk *)user_data;
    struct mem_file *f = lookup(d, file, true);
    if (f == NULL) return -1;
    d->appends++;
    if (d->reenter == RE_FREE_IN_APPEND) {
        leasehold_landlord_free(d->ll);
        d->reenter = RE_NONE;
    }
    if (fails_now(d)) {
        put(f, data, (size_t)(store_rand(&d->rng) % (len + 1))); /* some of it reached the disk */
        return -5;
    }
    put(f, data, len);
    return 0;
}

static int32_t d_sync(void *user_data, const char *file) {
    struct disk *d = (struct disk *)user_data;
    struct mem_file *f = lookup(d, file, false);
    d->syncs++;
    if (d->reenter == RE_GRANT_AND_COMMIT) {
        /* Nothing of the landlord is borrowed here: a grant works (it goes in the next commit),
         * a commit from inside a commit is BUSY. */
        leasehold_grant g;
        uint64_t durable = 0;
        d->reentrant_grant = leasehold_landlord_grant(d->ll, (const uint8_t *)"inside", 6, 1000, 5, &g);
        d->reentrant_commit = leasehold_landlord_commit(d->ll, &durable);
        d->reenter = RE_NONE;
    }
    if (d->reenter == RE_FREE_IN_SYNC) {
        leasehold_landlord_free(d->ll);
        d->reenter = RE_NONE;
    }
    if (fails_now(d)) return -6;
    if (f != NULL) f->synced = f->len;
    return 0;
}

static int32_t d_replace(void *user_data, const char *file, const uint8_t *data, size_t len) {
    struct disk *d = (struct disk *)user_data;
    d->replaces++;
    if (fails_now(d)) return -7; /* atomic: the old contents stay */
    struct mem_file *f = lookup(d, file, true);
    if (f == NULL) return -1;
    f->len = 0;
    put(f, data, len);
    f->synced = f->len;
    return 0;
}

static int32_t d_truncate(void *user_data, const char *file, uint64_t len) {
    struct disk *d = (struct disk *)user_data;
    d->truncates++;
    if (fails_now(d)) return -8;
    struct mem_file *f = lookup(d, file, false);
    if (f == NULL) return -1;
    if (len < f->len) f->len = (size_t)len;
    f->synced = f->len;
    return 0;
}

static int32_t d_remove(void *user_data, const char *file) {
    struct disk *d = (struct disk *)user_data;
    d->removes++;
    if (fails_now(d)) return -9;
    struct mem_file *f = lookup(d, file, false);
    if (f != NULL) {
        free(f->data);
        *f = d->files[--d->n];
    }
    return 0;
}

/* A crash: every file loses what was not synced, except (if `torn`) a random part of it (a torn
 * write). */
static int crash_(struct disk *d, bool torn_writes) {
    int torn = 0;
    for (int i = 0; i < d->n; i++) {
        struct mem_file *f = &d->files[i];
        size_t unsynced = f->len - f->synced;
        size_t keep = unsynced ? (size_t)(store_rand(&d->rng) % (unsynced + 1)) : 0;
        if (!torn_writes || store_rand(&d->rng) % 2) keep = 0;
        torn += keep > 0;
        f->len = f->synced + keep;
        f->synced = f->len;
    }
    return torn;
}

static int crash(struct disk *d) {
    return crash_(d, true);
}

static leasehold_store_io io_of(struct disk *d) {
    leasehold_store_io io = {d, d_append, d_sync, d_replace, d_truncate, d_remove};
    return io;
}

static leasehold_status open_disk(struct disk *d, const leasehold_landlord_config *cfg, int64_t now,
                                  leasehold_landlord **out, leasehold_recovery *info) {
    leasehold_store_file files[MAX_FILES];
    for (int i = 0; i < d->n; i++) {
        files[i].name = d->files[i].name;
        files[i].name_len = strlen(d->files[i].name);
        files[i].data = d->files[i].data;
        files[i].len = d->files[i].len;
    }
    leasehold_store_io io = io_of(d);
    leasehold_policy *p = store_policy();
    leasehold_status st = leasehold_landlord_open_io(&io, files, (size_t)d->n, cfg, p, now, out, info);
    leasehold_policy_free(p);
    return st;
}

static void disk_free(struct disk *d) {
    for (int i = 0; i < d->n; i++) free(d->files[i].data);
    d->n = 0;
}

/* ---------- a random run with failures and crashes ---------- */

enum { MAX_LEASES = 8192 };

/* One lease of the run: held or not as acknowledged (a grant never acknowledged: not held),
 * and held or not in the landlord now. */
struct model {
    leasehold_cookie cookie;
    bool acked, cur;
    bool ever_acked; /* some holder was told of it */
};

/* The lease with this cookie, if the run has seen it. */
static int find_lease(const struct model *m, int n, leasehold_cookie c) {
    for (int i = 0; i < n; i++)
        if (memcmp(m[i].cookie.bytes, c.bytes, 16) == 0) return i;
    return -1;
}

static void random_run(uint64_t seed) {
    struct disk d;
    memset(&d, 0, sizeof d);
    d.rng = seed;
    /* Small segments and compactions, so failures hit rotations, snapshots and removals. */
    leasehold_landlord_config *cfg = store_config(1024, 2048);
    leasehold_landlord *ll = NULL;
    leasehold_recovery info;
    OK(open_disk(&d, cfg, 0, &ll, &info));
    CHECK(info.created && d.replaces == 1);
    static struct model m[MAX_LEASES];
    int n = 0, crashes = 0, failed_commits = 0, commits = 0, torn_writes = 0, torn_found = 0;
    int wrong = 0, unwritten_back = 0, settled = 0, reissued = 0, reissued_told = 0;
    int64_t now = 0;
    char name[32];
    for (int round = 0; round < 300 && n < MAX_LEASES - 32; round++) {
        int steps = 1 + (int)(store_rand(&d.rng) % 12);
        for (int s = 0; s < steps; s++, now++) {
            uint64_t r = store_rand(&d.rng) % 10;
            int pick = n > 0 ? (int)(store_rand(&d.rng) % (uint64_t)n) : -1;
            if (r < 6 || pick < 0) {
                leasehold_grant g;
                snprintf(name, sizeof name, "lease %d", n);
                OK(leasehold_landlord_grant(ll, (const uint8_t *)name, strlen(name), 1000000, now, &g));
                /* A grant lost in a crash was never acknowledged: recovery replays the cookie
                 * generator exactly, so its cookie comes again. A cookie anyone was told of
                 * never does. */
                int again = find_lease(m, n, g.cookie);
                if (again >= 0) {
                    reissued++;
                    reissued_told += m[again].ever_acked || m[again].cur;
                }
                int k = again >= 0 ? again : n++;
                m[k].cookie = g.cookie;
                m[k].acked = m[k].ever_acked = false;
                m[k].cur = true;
            } else if (m[pick].cur) {
                if (r < 8) {
                    int64_t granted = 0;
                    OK(leasehold_landlord_renew(ll, m[pick].cookie, 500000, now, &granted));
                } else {
                    OK(leasehold_landlord_cancel(ll, m[pick].cookie, now, NULL, NULL));
                    m[pick].cur = false;
                }
            }
        }
        /* Commit (seven rounds in eight), with a write that fails at a random operation one
         * time in four. */
        bool attempted = store_rand(&d.rng) % 8 != 0;
        d.fail_in = store_rand(&d.rng) % 4 == 0 ? 1 + (int)(store_rand(&d.rng) % 4) : 0;
        leasehold_status st = LEASEHOLD_STATUS_OK;
        if (attempted) {
            uint64_t durable = 0;
            st = leasehold_landlord_commit(ll, &durable);
            if (st == LEASEHOLD_STATUS_OK) {
                commits++;
                uint64_t seq = 0;
                OK(leasehold_landlord_journal_seq(ll, &seq));
                CHECK(durable == seq);
                for (int i = 0; i < n; i++) {
                    m[i].acked = m[i].cur; /* acknowledged now */
                    m[i].ever_acked |= m[i].cur;
                }
            } else {
                CHECK(st == LEASEHOLD_STATUS_IO);
                failed_commits++;
                uint64_t durable2 = 0;
                /* Poisoned: what reached the disk is unknown, so nothing more is acknowledged. */
                FAILS(LEASEHOLD_STATUS_IO, leasehold_landlord_commit(ll, &durable2));
                CHECK(strstr(leasehold_last_error_message(), "failed earlier") != NULL);
            }
        }
        d.fail_in = 0;
        /* Crash after every failed commit, and now and then after a good one or none. */
        if (st == LEASEHOLD_STATUS_OK && store_rand(&d.rng) % 5 != 0) continue;
        leasehold_landlord_free(ll);
        ll = NULL;
        torn_writes += crash(&d);
        crashes++;
        st = open_disk(&d, cfg, now, &ll, &info);
        OK(st);
        if (st != LEASEHOLD_STATUS_OK) break;
        torn_found += info.torn_tail;
        size_t live = 0;
        for (int i = 0; i < n; i++) {
            int64_t e = 0;
            bool h = leasehold_landlord_get(ll, m[i].cookie, now, &e, NULL, NULL) == LEASEHOLD_STATUS_OK;
            if (m[i].cur == m[i].acked) {
                wrong += h != m[i].acked;
            } else if (!attempted) {
                unwritten_back += h != m[i].acked; /* never handed to the disk */
            } else {
                settled++; /* in the failed commit: either is right, and now it is settled */
                m[i].acked = h;
                m[i].ever_acked |= h; /* a holder may be told of it from now on */
            }
            m[i].cur = m[i].acked;
            live += m[i].acked;
        }
        CHECK(info.leases == live);
    }
    CHECK(wrong == 0 && unwritten_back == 0 && reissued_told == 0);
    CHECK(crashes > 10 && failed_commits > 5 && commits > 50);
    printf("store_io: seed %llu: %d leases, %d commits, %d failed writes, %d crashes (%d kept part of an "
           "unsynced write, %d torn tails dropped), %d unacknowledged changes settled; acknowledged state "
           "wrong after reopen: %d, unwritten changes back: %d; cookies of lost grants issued again: %d, "
           "of acknowledged ones: %d; ops: %d appends, %d syncs, %d replaces, %d truncates, %d removes\n",
           (unsigned long long)seed, n, commits, failed_commits, crashes, torn_writes, torn_found, settled, wrong,
           unwritten_back, reissued, reissued_told, d.appends, d.syncs, d.replaces, d.truncates, d.removes);
    leasehold_landlord_free(ll);
    leasehold_landlord_config_free(cfg);
    disk_free(&d);
}

/* ---------- callbacks that call back ---------- */

static void reentrancy(void) {
    struct disk d;
    memset(&d, 0, sizeof d);
    d.rng = 1;
    leasehold_landlord_config *cfg = store_config(0, 0);
    leasehold_landlord *ll = NULL;
    OK(open_disk(&d, cfg, 0, &ll, NULL));
    leasehold_grant g;
    OK(leasehold_landlord_grant(ll, (const uint8_t *)"outside", 7, 1000, 1, &g));

    /* A sync callback that grants and commits on the landlord being committed. */
    d.ll = ll;
    d.reenter = RE_GRANT_AND_COMMIT;
    uint64_t durable = 0, seq = 0;
    OK(leasehold_landlord_commit(ll, &durable));
    CHECK(d.reentrant_grant == LEASEHOLD_STATUS_OK);
    CHECK(d.reentrant_commit == LEASEHOLD_STATUS_BUSY);
    OK(leasehold_landlord_journal_seq(ll, &seq));
    CHECK(seq == durable + 1); /* the grant made inside waits for the next commit */
    OK(leasehold_landlord_commit(ll, &durable));
    CHECK(durable == seq);
    size_t n = 0;
    OK(leasehold_landlord_len(ll, &n));
    CHECK(n == 2);

    /* Freed inside the append: the commit stops there and says so; the memory goes when the
     * commit returns (valgrind checks). */
    OK(leasehold_landlord_grant(ll, (const uint8_t *)"lost", 4, 1000, 6, &g));
    d.reenter = RE_FREE_IN_APPEND;
    FAILS(LEASEHOLD_STATUS_BUSY, leasehold_landlord_commit(ll, &durable));
    CHECK(strstr(leasehold_last_error_message(), "freed") != NULL);

    /* Freed inside the sync, the last operation: the commit did get through. */
    crash_(&d, false); /* "lost" was appended, never synced */
    OK(open_disk(&d, cfg, 10, &ll, NULL));
    OK(leasehold_landlord_grant(ll, (const uint8_t *)"kept", 4, 1000, 11, &g));
    d.ll = ll;
    d.reenter = RE_FREE_IN_SYNC;
    durable = 0;
    OK(leasehold_landlord_commit(ll, &durable));
    CHECK(durable > 0);
    leasehold_recovery info;
    OK(open_disk(&d, cfg, 20, &ll, &info));
    int64_t e = 0;
    CHECK(info.leases == 3 && leasehold_landlord_get(ll, g.cookie, 20, &e, NULL, NULL) == LEASEHOLD_STATUS_OK);
    leasehold_landlord_free(ll);

    /* A callback missing, a failing callback at open, a file with no bytes pointer. */
    leasehold_store_io io = io_of(&d);
    io.truncate = NULL;
    leasehold_policy *p = store_policy();
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_open_io(&io, NULL, 0, cfg, p, 0, &ll, NULL));
    CHECK(strstr(leasehold_last_error_message(), "truncate") != NULL);
    struct disk fresh;
    memset(&fresh, 0, sizeof fresh);
    fresh.fail_in = 1; /* the new store's first snapshot */
    io = io_of(&fresh);
    FAILS(LEASEHOLD_STATUS_IO, leasehold_landlord_open_io(&io, NULL, 0, cfg, p, 0, &ll, NULL));
    leasehold_store_file bad = {"snapshot", 8, NULL, 10};
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_open_io(&io, &bad, 1, cfg, p, 0, &ll, NULL));
    /* Damage is refused through callbacks as through a directory. */
    leasehold_store_file junk = {"snapshot", 8, (const uint8_t *)"not a snapshot", 14};
    FAILS(LEASEHOLD_STATUS_DECODE, leasehold_landlord_open_io(&io, &junk, 1, cfg, p, 0, &ll, NULL));
    leasehold_policy_free(p);
    disk_free(&fresh);
    disk_free(&d);
    leasehold_landlord_config_free(cfg);
}

void test_store_io(void) {
    const char *s_env = getenv("LEASEHOLD_STORE_IO_SEED");
    uint64_t seed = s_env ? strtoull(s_env, NULL, 10) : 0x5eed1234ULL;
    random_run(seed ? seed : 1);
    reentrancy();
}
