/* Durable landlords in a directory (issue 14): open, commit, reopen; rotation and compaction;
 * a truncated last record; a flipped byte in the middle; a missing snapshot; the directory
 * lock; many threads with group commit (leasehold_shared_landlord). The process-crash test
 * is in test_store_crash.c, the callback host in test_store_io.c. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "store_util.h"

static char path_buf[4096];

static const char *file_in(const char *dir, const char *name) {
    snprintf(path_buf, sizeof path_buf, "%s/%s", dir, name);
    return path_buf;
}

static bool holds(leasehold_landlord *ll, leasehold_cookie c, int64_t now, int64_t *exp) {
    int64_t e = 0;
    leasehold_status st = leasehold_landlord_get(ll, c, now, &e, NULL, NULL);
    if (exp) *exp = e;
    return st == LEASEHOLD_STATUS_OK;
}

static leasehold_grant grant(leasehold_landlord *ll, const char *resource, int64_t d, int64_t now) {
    leasehold_grant g;
    memset(&g, 0, sizeof g);
    OK(leasehold_landlord_grant(ll, (const uint8_t *)resource, strlen(resource), d, now, &g));
    return g;
}

static uint64_t commit(leasehold_landlord *ll) {
    uint64_t durable = 0;
    OK(leasehold_landlord_commit(ll, &durable));
    return durable;
}

/* ---------- open, commit, reopen ---------- */

static void reopen_keeps_every_committed_lease(void) {
    char dir[512];
    store_tmpdir(dir, sizeof dir);
    leasehold_landlord_config *cfg = store_config(0, 0);
    leasehold_landlord *ll = NULL;
    leasehold_recovery info;
    memset(&info, 0xff, sizeof info);
    OK(store_open(dir, cfg, 1000, &ll, &info));
    CHECK(info.created && info.leases == 0 && !info.torn_tail && info.replayed == 0);
    bool durable_flag = false;
    OK(leasehold_landlord_is_durable(ll, &durable_flag));
    CHECK(durable_flag);

    /* 50 grants, a commit after every 10 (group commit: one append and one sync each). */
    enum { N = 50 };
    leasehold_grant g[N];
    int64_t exp[N];
    int64_t now = 1000;
    uint64_t seq = 0, prev = 0, durable = 0;
    char name[32];
    for (int i = 0; i < N; i++, now++) {
        snprintf(name, sizeof name, "lease-%d", i);
        g[i] = grant(ll, name, 60000 + i, now);
        exp[i] = g[i].expiration;
        OK(leasehold_landlord_journal_seq(ll, &seq));
        CHECK(seq > prev); /* every answer depends on a new record */
        prev = seq;
        if (i % 10 == 9) {
            durable = commit(ll);
            CHECK(durable == seq);
        }
    }
    /* Renew ten, cancel ten, then commit. */
    for (int i = 0; i < 10; i++, now++) {
        int64_t granted = 0;
        OK(leasehold_landlord_renew(ll, g[i].cookie, 120000, now, &granted));
        CHECK(granted == 120000);
        exp[i] = now + granted;
    }
    for (int i = 10; i < 20; i++, now++) OK(leasehold_landlord_cancel(ll, g[i].cookie, now, NULL, NULL));
    int64_t last_time = now - 1; /* the time of the last committed record */
    durable = commit(ll);
    OK(leasehold_landlord_journal_seq(ll, &seq));
    CHECK(durable == seq);
    CHECK(commit(ll) == durable); /* nothing new: nothing written */

    /* A second handle on the same directory is refused while this one holds it. */
    leasehold_landlord *other = NULL;
    FAILS(LEASEHOLD_STATUS_IO, store_open(dir, cfg, now, &other, NULL));
    CHECK(strstr(leasehold_last_error_message(), "in use") != NULL);
    CHECK(other == NULL);

    /* A grant never committed is never acknowledged: it goes with the handle, as in a crash. */
    leasehold_grant lost = grant(ll, "never committed", 60000, now);
    leasehold_landlord_free(ll);

    /* Reopen much later, on another clock: time spent down does not count. */
    int64_t later = 50000000;
    OK(store_open(dir, cfg, later, &ll, &info));
    CHECK(!info.created && !info.torn_tail && info.leases == N - 10 && info.last_seq == durable);
    CHECK(info.replayed == durable); /* the first snapshot was the empty store's */
    int present = 0, exact = 0;
    for (int i = 0; i < N; i++) {
        int64_t e = 0;
        bool h = holds(ll, g[i].cookie, later, &e);
        if (i >= 10 && i < 20) {
            CHECK(!h);
            continue;
        }
        present += h;
        /* Every lease keeps the time it had left at the last record. */
        exact += h && e - later == exp[i] - last_time;
    }
    CHECK(present == N - 10);
    CHECK(exact == N - 10);
    CHECK(!holds(ll, lost.cookie, later, NULL));
    printf("store: reopen after %d grants, 10 renewals, 10 cancels: %zu leases back, %d with the "
           "time they had left, %llu records replayed\n",
           N, info.leases, exact, (unsigned long long)info.replayed);
    leasehold_landlord_free(ll);
    leasehold_landlord_config_free(cfg);
    store_rmdir(dir);
}

/* ---------- rotation and compaction ---------- */

static void rotation_and_compaction(void) {
    char dir[512];
    store_tmpdir(dir, sizeof dir);
    /* Segments of 2 KiB, compaction once the log passes 8 KiB and the snapshot. */
    leasehold_landlord_config *cfg = store_config(2048, 8192);
    leasehold_landlord *ll = NULL;
    OK(store_open(dir, cfg, 0, &ll, NULL));
    enum { N = 1500 };
    leasehold_cookie *c = (leasehold_cookie *)malloc(N * sizeof *c);
    int most_segments = 0, compactions = 0;
    size_t last_snapshot = 0;
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "r%d", i);
        c[i] = grant(ll, name, 1000000, i).cookie;
        if (i % 5 == 4) {
            commit(ll);
            int n = store_segment_count(dir);
            if (n > most_segments) most_segments = n;
            size_t len = 0;
            uint8_t *snap = store_read_file(file_in(dir, "snapshot"), &len);
            if (snap != NULL && len != last_snapshot) {
                compactions++;
                last_snapshot = len;
            }
            free(snap);
        }
    }
    CHECK(most_segments > 1); /* segments rotate */
    CHECK(compactions > 2);   /* the first snapshot, then compactions as the log outgrew it */
    /* A forced compaction leaves a snapshot and no log. */
    uint64_t durable = 0;
    OK(leasehold_landlord_compact(ll, &durable));
    CHECK(store_segment_count(dir) == 0);
    leasehold_landlord_free(ll);
    leasehold_recovery info;
    OK(store_open(dir, cfg, 5000, &ll, &info));
    CHECK(info.leases == N && info.replayed == 0 && info.last_seq == durable);
    int present = 0;
    for (int i = 0; i < N; i++) present += holds(ll, c[i], 5000, NULL);
    CHECK(present == N);
    printf("store: %d leases through segments of 2 KiB (up to %d at once) and %d snapshots: %d back\n",
           N, most_segments, compactions, present);
    leasehold_landlord_free(ll);
    free(c);
    leasehold_landlord_config_free(cfg);
    store_rmdir(dir);
}

/* ---------- damage ---------- */

/* A store with three commits of one grant each: A, B, C. */
static void three_commits(const char *dir, const leasehold_landlord_config *cfg, leasehold_cookie out[3]) {
    leasehold_landlord *ll = NULL;
    OK(store_open(dir, cfg, 0, &ll, NULL));
    const char *names[3] = {"A", "B", "C"};
    for (int i = 0; i < 3; i++) {
        out[i] = grant(ll, names[i], 100000, i).cookie;
        commit(ll);
    }
    leasehold_landlord_free(ll);
}

static void truncated_last_record(void) {
    char dir[512];
    store_tmpdir(dir, sizeof dir);
    leasehold_landlord_config *cfg = store_config(0, 0);
    leasehold_cookie c[3];
    three_commits(dir, cfg, c);
    const char *seg = store_last_segment(dir);
    CHECK(seg != NULL);
    char seg_path[4096];
    snprintf(seg_path, sizeof seg_path, "%s/%s", dir, seg ? seg : "missing");
    size_t len = 0;
    uint8_t *bytes = store_read_file(seg_path, &len);
    CHECK(bytes != NULL && len > 40);
    /* The last frame (C's) cut short by 5 bytes, as by a crash in the middle of the write. */
    CHECK(truncate(seg_path, (off_t)(len - 5)) == 0);
    leasehold_landlord *ll = NULL;
    leasehold_recovery info;
    OK(store_open(dir, cfg, 10, &ll, &info));
    CHECK(info.torn_tail && info.leases == 2);
    CHECK(holds(ll, c[0], 10, NULL) && holds(ll, c[1], 10, NULL) && !holds(ll, c[2], 10, NULL));
    /* The log goes on after the cut. */
    leasehold_cookie d = grant(ll, "D", 100000, 10).cookie;
    commit(ll);
    leasehold_landlord_free(ll);
    OK(store_open(dir, cfg, 20, &ll, &info));
    CHECK(!info.torn_tail && info.leases == 3 && holds(ll, d, 20, NULL));
    leasehold_landlord_free(ll);

    /* Garbage after the last frame (a write that reached the disk only in part): a torn tail. */
    size_t len2 = 0;
    uint8_t *now_bytes = store_read_file(seg_path, &len2);
    uint8_t *grown = (uint8_t *)malloc(len2 + 100);
    memcpy(grown, now_bytes, len2);
    for (int i = 0; i < 100; i++) grown[len2 + i] = (uint8_t)(i * 37 + 11);
    CHECK(store_write_file(seg_path, grown, len2 + 100) == 0);
    OK(store_open(dir, cfg, 30, &ll, &info));
    CHECK(info.torn_tail && info.leases == 3);
    leasehold_landlord_free(ll);
    size_t len3 = 0;
    uint8_t *after = store_read_file(seg_path, &len3);
    CHECK(len3 == len2); /* cut back to the last whole frame */
    printf("store: truncated last record: dropped, %zu leases kept; 100 bytes of garbage: dropped\n",
           info.leases);
    free(after);
    free(grown);
    free(now_bytes);
    free(bytes);
    leasehold_landlord_config_free(cfg);
    store_rmdir(dir);
}

static void flipped_byte_in_the_middle(void) {
    char dir[512];
    store_tmpdir(dir, sizeof dir);
    leasehold_landlord_config *cfg = store_config(0, 0);
    leasehold_cookie c[3];
    three_commits(dir, cfg, c);
    const char *seg = store_last_segment(dir);
    char seg_path[4096];
    snprintf(seg_path, sizeof seg_path, "%s/%s", dir, seg ? seg : "missing");
    size_t len = 0;
    uint8_t *bytes = store_read_file(seg_path, &len);
    CHECK(bytes != NULL && len > 40);
    /* One bit of the first frame's payload (A's grant), with two valid frames after it. */
    bytes[30] ^= 0x04;
    CHECK(store_write_file(seg_path, bytes, len) == 0);
    leasehold_landlord *ll = NULL;
    FAILS(LEASEHOLD_STATUS_DECODE, store_open(dir, cfg, 10, &ll, NULL));
    const char *msg = leasehold_last_error_message();
    CHECK(strstr(msg, "at byte") != NULL && strstr(msg, dir) != NULL);
    printf("store: flipped byte in the middle refused: %s\n", msg);
    CHECK(ll == NULL);
    /* Refused, and nothing was changed: the same bytes are still there. */
    size_t len2 = 0;
    uint8_t *again = store_read_file(seg_path, &len2);
    CHECK(again != NULL && len2 == len && memcmp(again, bytes, len) == 0);
    free(again);
    free(bytes);

    /* A flipped byte in the snapshot is refused too. */
    char dir2[512];
    store_tmpdir(dir2, sizeof dir2);
    three_commits(dir2, cfg, c);
    OK(store_open(dir2, cfg, 10, &ll, NULL));
    uint64_t durable = 0;
    OK(leasehold_landlord_compact(ll, &durable));
    leasehold_landlord_free(ll);
    char snap_path[4096];
    snprintf(snap_path, sizeof snap_path, "%s/snapshot", dir2);
    bytes = store_read_file(snap_path, &len);
    CHECK(bytes != NULL && len > 60);
    bytes[len / 2] ^= 0x80;
    CHECK(store_write_file(snap_path, bytes, len) == 0);
    FAILS(LEASEHOLD_STATUS_DECODE, store_open(dir2, cfg, 10, &ll, NULL));
    printf("store: flipped byte in the snapshot refused: %s\n", leasehold_last_error_message());
    free(bytes);
    leasehold_landlord_config_free(cfg);
    store_rmdir(dir);
    store_rmdir(dir2);
}

static void missing_snapshot(void) {
    leasehold_landlord_config *cfg = store_config(0, 0);
    leasehold_cookie c[3];
    leasehold_landlord *ll = NULL;
    leasehold_recovery info;

    /* The log still starts at record 1: the landlord is rebuilt from the configuration and the
     * whole log. */
    char dir[512];
    store_tmpdir(dir, sizeof dir);
    three_commits(dir, cfg, c);
    CHECK(unlink(file_in(dir, "snapshot")) == 0);
    OK(store_open(dir, cfg, 10, &ll, &info));
    CHECK(!info.created && info.leases == 3 && info.replayed == 3);
    CHECK(holds(ll, c[0], 10, NULL) && holds(ll, c[1], 10, NULL) && holds(ll, c[2], 10, NULL));
    leasehold_landlord_free(ll);

    /* ... but not with another seed: replay finds that the cookies do not match. */
    uint8_t other_seed[LEASEHOLD_SEED_SIZE] = {99};
    leasehold_landlord_config *other = NULL;
    OK(leasehold_landlord_config_new(7, other_seed, sizeof other_seed, &other));
    FAILS(LEASEHOLD_STATUS_DECODE, store_open(dir, other, 10, &ll, NULL));
    leasehold_landlord_config_free(other);

    /* After a compaction the log starts later: without the snapshot, records are lost. */
    char dir2[512];
    store_tmpdir(dir2, sizeof dir2);
    three_commits(dir2, cfg, c);
    OK(store_open(dir2, cfg, 10, &ll, NULL));
    uint64_t durable = 0;
    OK(leasehold_landlord_compact(ll, &durable));
    grant(ll, "D", 100000, 10);
    commit(ll);
    leasehold_landlord_free(ll);
    CHECK(unlink(file_in(dir2, "snapshot")) == 0);
    FAILS(LEASEHOLD_STATUS_DECODE, store_open(dir2, cfg, 20, &ll, NULL));
    CHECK(strstr(leasehold_last_error_message(), "missing") != NULL);
    printf("store: missing snapshot with the log from record 1: %zu leases back; after a "
           "compaction: refused: %s\n",
           info.leases, leasehold_last_error_message());
    leasehold_landlord_config_free(cfg);
    store_rmdir(dir);
    store_rmdir(dir2);
}

static void bad_arguments(void) {
    leasehold_landlord_config *cfg = store_config(0, 0);
    leasehold_policy *p = store_policy();
    leasehold_landlord *ll = NULL;
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_open_dir(NULL, 3, cfg, p, 0, &ll, NULL));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_landlord_open_dir("", 0, cfg, p, 0, &ll, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_open_dir("/tmp/x", 6, NULL, p, 0, &ll, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_open_dir("/tmp/x", 6, cfg, p, 0, NULL, NULL));
    /* A path where no directory can be made. */
    FAILS(LEASEHOLD_STATUS_IO, leasehold_landlord_open_dir("/proc/leasehold", 15, cfg, p, 0, &ll, NULL));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_landlord_config_set_store(cfg, 0, 0));
    FAILS(LEASEHOLD_STATUS_INVALID_ARGUMENT, leasehold_landlord_config_set_journal_clock_interval(cfg, -1));
    OK(leasehold_landlord_config_set_journal_clock_interval(cfg, 500));
    CHECK(ll == NULL);
    /* A landlord in memory: nothing to write, nothing to wait for. */
    OK(leasehold_landlord_new(cfg, p, &ll));
    uint64_t seq = 1, durable = 1;
    bool is = true;
    OK(leasehold_landlord_is_durable(ll, &is));
    grant(ll, "x", 1000, 0);
    OK(leasehold_landlord_journal_seq(ll, &seq));
    OK(leasehold_landlord_commit(ll, &durable));
    CHECK(!is && seq == 0 && durable == 0);
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_commit(ll, NULL));
    FAILS(LEASEHOLD_STATUS_NULL_ARGUMENT, leasehold_landlord_commit(NULL, &durable));
    CHECK(strcmp(leasehold_status_name(104), "IO") == 0);
    leasehold_landlord_free(ll);
    leasehold_policy_free(p);
    leasehold_landlord_config_free(cfg);
}

/* ---------- many threads: group commit ---------- */

enum { THREADS = 4, PER_THREAD = 40 };

struct worker {
    leasehold_shared_landlord *ll;
    int index;
    leasehold_cookie cookies[PER_THREAD];
    int acknowledged, ordered, failures;
};

static void *work(void *arg) {
    struct worker *w = (struct worker *)arg;
    uint64_t prev = 0;
    char name[32];
    for (int i = 0; i < PER_THREAD; i++) {
        snprintf(name, sizeof name, "t%d-%d", w->index, i);
        leasehold_grant g;
        uint64_t seq = 0;
        if (leasehold_shared_landlord_grant(w->ll, (const uint8_t *)name, strlen(name), 100000, i, &g, &seq) !=
            LEASEHOLD_STATUS_OK) {
            w->failures++;
            continue;
        }
        w->ordered += seq > prev;
        prev = seq;
        /* Reply after durable: the grant is acknowledged only once its record is. */
        if (leasehold_shared_landlord_wait_durable(w->ll, seq) != LEASEHOLD_STATUS_OK) {
            w->failures++;
            continue;
        }
        w->cookies[w->acknowledged++] = g.cookie;
    }
    return NULL;
}

static void shared_landlord_group_commit(void) {
    char dir[512];
    store_tmpdir(dir, sizeof dir);
    leasehold_landlord_config *cfg = store_config(0, 0);
    leasehold_policy *p = store_policy();
    leasehold_shared_landlord *sl = NULL;
    leasehold_recovery info;
    OK(leasehold_shared_landlord_open_dir(dir, strlen(dir), cfg, p, 0, &sl, &info));
    CHECK(info.created);
    struct worker w[THREADS];
    pthread_t t[THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < THREADS; i++) {
        w[i].ll = sl;
        w[i].index = i;
        CHECK(pthread_create(&t[i], NULL, work, &w[i]) == 0);
    }
    int acked = 0, ordered = 0, failures = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        acked += w[i].acknowledged;
        ordered += w[i].ordered;
        failures += w[i].failures;
    }
    CHECK(acked == THREADS * PER_THREAD && ordered == acked && failures == 0);
    uint64_t commits = 0;
    size_t len = 0;
    OK(leasehold_shared_landlord_commits(sl, &commits));
    OK(leasehold_shared_landlord_len(sl, &len));
    CHECK(commits >= 1 && commits <= (uint64_t)acked && len == (size_t)acked);

    /* An answer that fails still says what it depends on. */
    leasehold_cookie nobody;
    memset(&nobody, 0x5a, sizeof nobody);
    uint64_t seq = 12345;
    int64_t granted = 0;
    FAILS(LEASEHOLD_STATUS_UNKNOWN_LEASE, leasehold_shared_landlord_renew(sl, nobody, 1000, 10, &granted, &seq));
    CHECK(seq != 12345);
    OK(leasehold_shared_landlord_wait_durable(sl, seq));
    /* Renew and cancel one through the shared handle; expiry calls answer too. */
    OK(leasehold_shared_landlord_renew(sl, w[0].cookies[0], 50000, 20, &granted, &seq));
    OK(leasehold_shared_landlord_cancel(sl, w[0].cookies[1], 20, &seq));
    bool has = false, found = true;
    int64_t at = 0;
    OK(leasehold_shared_landlord_poll_timeout(sl, &has, &at));
    CHECK(has);
    OK(leasehold_shared_landlord_handle_timeout(sl, 30));
    leasehold_expired e;
    OK(leasehold_shared_landlord_poll_expired(sl, &e, &found, &seq));
    CHECK(!found);
    /* Requests over the wire: the reply and the record it depends on. */
    leasehold_request *req = NULL;
    uint8_t *msg = NULL, *reply = NULL;
    size_t msg_len = 0, reply_len = 0;
    OK(leasehold_request_new_grant(1, (const uint8_t *)"wire", 4, 1000, &req));
    OK(leasehold_request_encode(req, LEASEHOLD_ENCODING_BINARY, &msg, &msg_len));
    uint64_t before = seq;
    OK(leasehold_shared_landlord_handle_bytes(sl, msg, msg_len, LEASEHOLD_ENCODING_BINARY, 40, &reply, &reply_len,
                                              &seq));
    CHECK(seq > before && reply_len > 0);
    uint64_t durable = 0;
    OK(leasehold_shared_landlord_commit(sl, &durable));
    CHECK(durable == seq);
    leasehold_bytes_free(reply, reply_len);
    leasehold_bytes_free(msg, msg_len);
    leasehold_request_free(req);
    OK(leasehold_shared_landlord_commits(sl, &commits));
    leasehold_shared_landlord_free(sl);

    /* Everything acknowledged is in the directory. */
    leasehold_landlord *ll = NULL;
    OK(store_open(dir, cfg, 100, &ll, &info));
    int present = 0;
    for (int i = 0; i < THREADS; i++)
        for (int j = 0; j < w[i].acknowledged; j++) present += holds(ll, w[i].cookies[j], 100, NULL);
    CHECK(present == acked - 1 && info.leases == (size_t)acked); /* one cancelled, "wire" added */
    printf("store: %d threads, %d grants acknowledged after durable in %llu group commits; reopened: "
           "%d present (+1 cancelled)\n",
           THREADS, acked, (unsigned long long)commits, present);
    leasehold_landlord_free(ll);
    leasehold_policy_free(p);
    leasehold_landlord_config_free(cfg);
    store_rmdir(dir);
}

void test_store(void) {
    reopen_keeps_every_committed_lease();
    rotation_and_compaction();
    truncated_last_record();
    flipped_byte_in_the_middle();
    missing_snapshot();
    bad_arguments();
    shared_landlord_group_commit();
}
