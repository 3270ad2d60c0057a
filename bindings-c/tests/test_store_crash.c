/* A real process crash (issue 14, item 5, for C): a child process opens the store, grants
 * leases (and cancels some of them) and commits, writing each acknowledged cookie to a pipe
 * only after its commit returned; the parent kills it with SIGKILL at a random moment, reopens
 * the directory and checks that every acknowledged grant is there and every acknowledged
 * cancel stays cancelled. A cancel is announced before its commit ("P": pending, either outcome
 * is right if the child dies before acknowledging it) and acknowledged after ("C"). Several
 * kills on the same directory; the counts are printed.
 * LEASEHOLD_CRASH_KILLS and LEASEHOLD_CRASH_SEED override the defaults (6 kills). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "store_util.h"

enum { MAX_ACKED = 200000 };

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_line(int fd, const char *line) {
    size_t n = strlen(line);
    while (n > 0) {
        ssize_t k = write(fd, line, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) _exit(3);
        line += k;
        n -= (size_t)k;
    }
}

/* The child: grants in groups of 1 to 8, one commit per group, then acknowledges the group
 * ("G <hex>" lines); now and then cancels one of its own acknowledged leases ("P <hex>" before
 * the commit, "C <hex>" after).
 * Runs until killed (or 20 s, then exits). */
static void child(const char *dir, int fd, uint64_t seed, int incarnation) {
    leasehold_landlord_config *cfg = store_config(16384, 32768); /* rotations, compactions */
    leasehold_landlord *ll = NULL;
    if (store_open(dir, cfg, 0, &ll, NULL) != LEASEHOLD_STATUS_OK) {
        fprintf(stderr, "crash child: open: %s\n", leasehold_last_error_message());
        _exit(2);
    }
    leasehold_landlord_config_free(cfg);
    leasehold_cookie mine[64];
    int n_mine = 0;
    int64_t start = mono_ms();
    char line[64], hex[LEASEHOLD_COOKIE_HEX_SIZE];
    for (int i = 0; mono_ms() - start < 20000; i++) {
        int group = 1 + (int)(store_rand(&seed) % 8);
        leasehold_grant g[8];
        for (int k = 0; k < group; k++) {
            snprintf(line, sizeof line, "i%d-%d-%d", incarnation, i, k);
            if (leasehold_landlord_grant(ll, (const uint8_t *)line, strlen(line), 1000000, i, &g[k]) !=
                LEASEHOLD_STATUS_OK)
                _exit(4);
        }
        int cancel = n_mine > 0 && store_rand(&seed) % 4 == 0 ? (int)(store_rand(&seed) % (uint64_t)n_mine) : -1;
        leasehold_cookie cancelled;
        if (cancel >= 0) {
            cancelled = mine[cancel];
            leasehold_cookie_to_hex(cancelled, hex, sizeof hex);
            snprintf(line, sizeof line, "P %s\n", hex);
            write_line(fd, line);
            if (leasehold_landlord_cancel(ll, cancelled, i, NULL, NULL) != LEASEHOLD_STATUS_OK) _exit(5);
            mine[cancel] = mine[--n_mine];
        }
        uint64_t durable = 0;
        if (leasehold_landlord_commit(ll, &durable) != LEASEHOLD_STATUS_OK) _exit(6);
        /* Durable: now, and only now, the answers may leave. */
        for (int k = 0; k < group; k++) {
            leasehold_cookie_to_hex(g[k].cookie, hex, sizeof hex);
            snprintf(line, sizeof line, "G %s\n", hex);
            write_line(fd, line);
            if (n_mine < 64) mine[n_mine++] = g[k].cookie;
        }
        if (cancel >= 0) {
            leasehold_cookie_to_hex(cancelled, hex, sizeof hex);
            snprintf(line, sizeof line, "C %s\n", hex);
            write_line(fd, line);
        }
    }
    leasehold_landlord_free(ll);
    close(fd);
    _exit(0);
}

enum { LIVE, PENDING, CANCELLED };

struct acked {
    leasehold_cookie cookie;
    int state;
};

static struct acked *acked;
static int n_acked;

static int find(leasehold_cookie c) {
    for (int i = n_acked - 1; i >= 0; i--)
        if (memcmp(acked[i].cookie.bytes, c.bytes, 16) == 0) return i;
    return -1;
}

/* Takes whole lines out of `buf`; returns how many bytes were left unread (a partial line). */
static size_t parse_lines(char *buf, size_t len, int *bad) {
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != '\n') continue;
        buf[i] = '\0';
        char *l = buf + start;
        leasehold_cookie c;
        if (strlen(l) == 34 && leasehold_cookie_from_hex(l + 2, 32, &c) == LEASEHOLD_STATUS_OK) {
            if (l[0] == 'G' && n_acked < MAX_ACKED) {
                acked[n_acked].cookie = c;
                acked[n_acked++].state = LIVE;
            } else if (l[0] == 'P' || l[0] == 'C') {
                int k = find(c);
                if (k >= 0) acked[k].state = l[0] == 'P' ? PENDING : CANCELLED; else (*bad)++;
            } else {
                (*bad)++;
            }
        } else {
            (*bad)++;
        }
        start = i + 1;
    }
    memmove(buf, buf + start, len - start);
    return len - start;
}

void test_store_crash(void) {
    const char *k_env = getenv("LEASEHOLD_CRASH_KILLS");
    const char *s_env = getenv("LEASEHOLD_CRASH_SEED");
    int kills = k_env ? atoi(k_env) : 6;
    uint64_t seed = s_env ? strtoull(s_env, NULL, 10) : (uint64_t)time(NULL);
    if (seed == 0) seed = 1;
    printf("crash: seed %llu (LEASEHOLD_CRASH_SEED=%llu replays the choices)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    char dir[512];
    store_tmpdir(dir, sizeof dir);
    acked = (struct acked *)calloc(MAX_ACKED, sizeof *acked);
    n_acked = 0;
    int bad = 0, missing = 0, resurrected = 0, torn = 0, total_kills = 0, pending = 0;
    size_t leases_at_end = 0;
    static char buf[1 << 16];
    for (int round = 0; round < kills; round++) {
        int fds[2];
        CHECK(pipe(fds) == 0);
        uint64_t child_seed = store_rand(&seed);
        /* Let the child run 30 to 400 ms (slow under valgrind: it still gets past its open). */
        int64_t run_ms = 30 + (int64_t)(store_rand(&seed) % 371);
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            child(dir, fds[1], child_seed, round);
        }
        close(fds[1]);
        size_t have = 0;
        int64_t until = mono_ms() + run_ms;
        bool eof = false;
        /* Read acknowledgements while the child runs, then kill it without warning. */
        while (!eof) {
            int64_t left = until - mono_ms();
            if (left <= 0) break;
            struct pollfd p = {fds[0], POLLIN, 0};
            if (poll(&p, 1, (int)left) > 0) {
                ssize_t k = read(fds[0], buf + have, sizeof buf - have - 1);
                if (k <= 0) eof = true; else have = parse_lines(buf, have + (size_t)k, &bad);
            }
        }
        kill(pid, SIGKILL);
        int status = 0;
        waitpid(pid, &status, 0);
        total_kills += WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
        /* What the child acknowledged before it died is still in the pipe. */
        for (;;) {
            ssize_t k = read(fds[0], buf + have, sizeof buf - have - 1);
            if (k <= 0) break;
            have = parse_lines(buf, have + (size_t)k, &bad);
        }
        close(fds[0]);

        /* Reopen the directory: every acknowledged grant is there, every acknowledged cancel
         * stays cancelled. */
        leasehold_landlord_config *cfg = store_config(16384, 32768);
        leasehold_landlord *ll = NULL;
        leasehold_recovery info;
        leasehold_status st = store_open(dir, cfg, 1000000 + round, &ll, &info);
        OK(st);
        leasehold_landlord_config_free(cfg);
        if (st != LEASEHOLD_STATUS_OK) break;
        torn += info.torn_tail;
        for (int i = 0; i < n_acked; i++) {
            int64_t e = 0;
            bool h = leasehold_landlord_get(ll, acked[i].cookie, 1000000 + round, &e, NULL, NULL) ==
                     LEASEHOLD_STATUS_OK;
            if (acked[i].state == PENDING) {
                /* The child died between the cancel and its acknowledgement: either is right,
                 * and what the store holds now is what holds from here on. */
                acked[i].state = h ? LIVE : CANCELLED;
                pending++;
            } else if (acked[i].state == CANCELLED) {
                resurrected += h;
            } else {
                missing += !h;
            }
        }
        leases_at_end = info.leases;
        leasehold_landlord_free(ll);
    }
    int live = 0, cancels = 0;
    for (int i = 0; i < n_acked; i++) {
        live += acked[i].state == LIVE;
        cancels += acked[i].state == CANCELLED;
    }
    CHECK(total_kills == kills);
    CHECK(n_acked > 0);
    CHECK(bad == 0 && missing == 0 && resurrected == 0);
    CHECK(leases_at_end >= (size_t)live);
    printf("crash: %d SIGKILLs, %d grants and %d cancels acknowledged; after every reopen: %d acknowledged "
           "leases missing, %d cancelled leases back, %d torn tails dropped, %d cancels cut off before "
           "their acknowledgement; %zu leases in the store, %d acknowledged and live\n",
           total_kills, n_acked, cancels, missing, resurrected, torn, pending, leases_at_end, live);
    free(acked);
    store_rmdir(dir);
}
