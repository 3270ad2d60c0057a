/*
 * A landlord and a holder talking the leasehold wire protocol over a loopback TCP socket, with
 * the landlord durable: it keeps its leases in a directory, and halfway through the run it is
 * killed with SIGKILL and started again on the same directory while the holder keeps renewing.
 *
 * The process forks: the child is the landlord (it answers binary requests, drives expiry from
 * its own timer and reports the leases that expire); the parent is the holder (it takes two
 * leases, hands one to a renewal manager that keeps it alive, lets the other lapse, then has the
 * manager cancel the first). Both run libleasehold's sans-I/O state machines with the C driver
 * calls (`_poll_timeout`/`_handle_timeout` and `leasehold_renewal_manager_drive` with a transport
 * callback) on top of poll(2).
 *
 * Reply after durable: the landlord answers what arrived, commits (one append and one fsync for
 * all of it: `leasehold_landlord_commit`), and only then sends the replies; it commits before
 * reporting an expiry too. So whatever the holder was told survives the kill: the restarted
 * landlord recovers the lease (same cookie, same time left) and the holder's next renewal of it
 * simply works. The holder reconnects when the connection drops; the renewal manager retries
 * what was lost.
 *
 * Each process uses its own monotonic clock for `now`: the wire carries relative durations, so
 * the clocks never need to agree. Frames are a 4-byte big-endian length and a binary message.
 * Runs for about 2 s and exits by itself (hard limit 30 s); exit status 0 means all went as
 * expected.
 *
 *   landlord_holder [SCALE] [--data DIR] [--memory]
 *
 * SCALE (1..20) multiplies every time (slow hosts, sanitizers). The store is DIR (default:
 * `landlord-data` beside the program; created if missing, recovered if not); `--memory` keeps
 * the landlord in memory instead, and then it is not killed (it would forget the lease).
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "leasehold.h"

#define HARD_LIMIT_MS 30000

/* Lease length and run time; `landlord_holder SCALE` multiplies both (slow hosts, valgrind). */
static int64_t LEASE_MS = 500;
static int64_t RUN_MS = 1500;
/* The landlord's store; NULL: in memory. */
static const char *DATA_DIR = NULL;

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *who, const char *what, leasehold_status st) {
    fprintf(stderr, "%s: %s failed: %s: %s\n", who, what, leasehold_status_name((int32_t)st),
            leasehold_last_error_message());
    exit(1);
}

#define CALL(who, call)                                                                            \
    do {                                                                                           \
        leasehold_status st_ = (call);                                                             \
        if (st_ != LEASEHOLD_STATUS_OK) die(who, #call, st_);                                      \
    } while (0)

/* ---------- framing ---------- */

static int write_all(int fd, const uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int read_all(int fd, uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t k = read(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1; /* error or the peer closed */
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int send_frame(int fd, const uint8_t *msg, size_t len) {
    uint8_t hdr[4] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len};
    return write_all(fd, hdr, 4) == 0 && write_all(fd, msg, len) == 0 ? 0 : -1;
}

/* Reads one frame into a malloc'd buffer (at most 1 MiB). */
static int recv_frame(int fd, uint8_t **msg, size_t *len) {
    uint8_t hdr[4];
    if (read_all(fd, hdr, 4) != 0) return -1;
    size_t n = ((size_t)hdr[0] << 24) | ((size_t)hdr[1] << 16) | ((size_t)hdr[2] << 8) | hdr[3];
    if (n > (1u << 20)) return -1;
    *msg = (uint8_t *)malloc(n ? n : 1);
    if (*msg == NULL || read_all(fd, *msg, n) != 0) {
        free(*msg);
        return -1;
    }
    *len = n;
    return 0;
}

/* ---------- the landlord (child process) ---------- */

/* Runs one incarnation of the landlord on `listener` until the holder hangs up (or, when it is
 * the first of two, until it is killed). Returns 0 if what it saw is what the run expects. */
static int run_landlord(int listener, int incarnation) {
    const char *who = incarnation == 1 ? "landlord" : "landlord (restarted)";
    uint8_t seed[LEASEHOLD_SEED_SIZE];
    for (size_t i = 0; i < sizeof seed; i++) seed[i] = (uint8_t)(rand() ^ (int)getpid() ^ (int)(i * 37));
    leasehold_landlord_config *cfg = NULL;
    leasehold_policy *policy = NULL;
    leasehold_landlord *ll = NULL;
    leasehold_recovery info;
    memset(&info, 0, sizeof info);
    CALL(who, leasehold_landlord_config_new(0x1ea5e, seed, sizeof seed, &cfg));
    CALL(who, leasehold_policy_new_bounded(LEASE_MS, LEASE_MS, &policy));
    if (DATA_DIR != NULL) {
        /* Durable: recovers what the directory holds (the seed above is used only for a new
         * store; a store keeps its own). */
        CALL(who, leasehold_landlord_open_dir(DATA_DIR, strlen(DATA_DIR), cfg, policy, now_ms(), &ll, &info));
        printf("%s: store %s: %s, %zu lease(s) recovered (%llu journal records replayed%s)\n", who, DATA_DIR,
               info.created ? "new" : "opened", info.leases, (unsigned long long)info.replayed,
               info.torn_tail ? ", a torn tail dropped" : "");
    } else {
        CALL(who, leasehold_landlord_new(cfg, policy, &ll));
    }
    leasehold_landlord_config_free(cfg);
    leasehold_policy_free(policy);

    int conn = accept(listener, NULL, NULL);
    close(listener);
    if (conn < 0) {
        perror("landlord: accept");
        return 1;
    }
    int64_t start = now_ms();
    int answered = 0, expired = 0, done = 0;
    while (!done && now_ms() - start < HARD_LIMIT_MS) {
        /* Sleep until a message arrives or the next lease may expire. */
        bool has = false;
        int64_t at = 0;
        CALL(who, leasehold_landlord_poll_timeout(ll, &has, &at));
        int64_t wait = has ? at - now_ms() : 1000;
        if (wait < 0) wait = 0;
        if (wait > 1000) wait = 1000;
        struct pollfd pfd = {conn, POLLIN, 0};
        int ready = poll(&pfd, 1, (int)wait);
        /* Answer what arrived; the reply waits until its records are durable. */
        uint8_t *reply = NULL;
        size_t reply_len = 0;
        if (ready > 0) {
            uint8_t *msg = NULL;
            size_t len = 0;
            if (recv_frame(conn, &msg, &len) != 0) {
                done = 1; /* the holder hung up */
            } else {
                CALL(who, leasehold_landlord_handle_bytes(ll, msg, len, LEASEHOLD_ENCODING_BINARY, now_ms(), &reply,
                                                          &reply_len));
                free(msg);
                answered++;
            }
        }
        CALL(who, leasehold_landlord_handle_timeout(ll, now_ms()));
        leasehold_expired gone[16];
        size_t n_gone = 0;
        bool found = true;
        while (found && n_gone < 16) {
            CALL(who, leasehold_landlord_poll_expired(ll, &gone[n_gone], &found));
            n_gone += found;
        }
        /* Group commit: one append and one fsync for everything above (nothing to write: it
         * returns at once; a landlord in memory: always). Only then do answers leave. */
        uint64_t durable = 0;
        CALL(who, leasehold_landlord_commit(ll, &durable));
        if (reply != NULL) {
            if (send_frame(conn, reply, reply_len) != 0) done = 1;
            leasehold_bytes_free(reply, reply_len);
        }
        for (size_t i = 0; i < n_gone; i++) {
            char hex[LEASEHOLD_COOKIE_HEX_SIZE];
            CALL(who, leasehold_cookie_to_hex(gone[i].cookie, hex, sizeof hex));
            printf("%s: lease %.8s... on \"%.*s\" expired\n", who, hex, (int)gone[i].resource_len,
                   (const char *)gone[i].resource);
            leasehold_bytes_free(gone[i].resource, gone[i].resource_len);
            expired++;
        }
    }
    size_t left = 0;
    CALL(who, leasehold_landlord_len(ll, &left));
    printf("%s: answered %d requests, %d lease(s) expired, %zu left\n", who, answered, expired, left);
    leasehold_landlord_free(ll);
    close(conn);
    /* Expected: the unrenewed lease expired (before the kill, when there is one), the renewed
     * one was cancelled; a restarted landlord got the renewed one back from its store. */
    if (incarnation == 2) return (expired == 0 && left == 0 && info.leases == 1) ? 0 : 1;
    return (expired == 1 && left == 0) ? 0 : 1;
}

/* Starts a landlord process on `listener` (which this process keeps, so that holders can
 * connect while a landlord is being restarted). `close_fd` is a descriptor the child must not
 * keep (the holder's socket). */
static pid_t start_landlord(int listener, int incarnation, int close_fd) {
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        exit(1);
    }
    if (child == 0) {
        if (close_fd >= 0) close(close_fd);
        alarm(HARD_LIMIT_MS / 1000 + 2); /* never outlive a stuck parent */
        int rc = run_landlord(listener, incarnation);
        fflush(stdout);
        exit(rc); /* exit, not _exit: the leak checker runs at exit in the child too */
    }
    return child;
}

/* ---------- the holder (parent process) ---------- */

static uint64_t next_id = 1;

/* The landlord process, and when to kill it (durable runs only). */
static int LISTENER = -1;
static pid_t LANDLORD = -1;
static int64_t KILL_AT = -1;
static int RESTARTS = 0;

/* Sends a request and waits for its reply. `*sent_at` is when it was sent (holder's clock). */
static leasehold_reply *call(int fd, leasehold_request *req, int64_t *sent_at) {
    const char *who = "holder";
    uint8_t *msg = NULL;
    size_t len = 0;
    CALL(who, leasehold_request_encode(req, LEASEHOLD_ENCODING_BINARY, &msg, &len));
    leasehold_request_free(req);
    *sent_at = now_ms();
    int sent = send_frame(fd, msg, len);
    leasehold_bytes_free(msg, len);
    uint8_t *in = NULL;
    size_t in_len = 0;
    struct pollfd pfd = {fd, POLLIN, 0};
    if (sent != 0 || poll(&pfd, 1, (int)(10 * LEASE_MS)) <= 0 || recv_frame(fd, &in, &in_len) != 0) {
        fprintf(stderr, "holder: no answer from the landlord\n");
        kill(LANDLORD, SIGKILL);
        exit(1);
    }
    leasehold_reply *reply = NULL;
    CALL(who, leasehold_reply_decode(in, in_len, LEASEHOLD_ENCODING_BINARY, NULL, &reply));
    free(in);
    return reply;
}

static leasehold_lease take_lease(int fd, const char *resource, int64_t duration) {
    const char *who = "holder";
    leasehold_request *req = NULL;
    CALL(who, leasehold_request_new_grant(next_id++, (const uint8_t *)resource, strlen(resource),
                                          duration, &req));
    int64_t sent_at = 0;
    leasehold_reply *reply = call(fd, req, &sent_at);
    leasehold_lease lease;
    /* The holder counts from its send time, so it never outlives the landlord's view. */
    CALL(who, leasehold_lease_from_reply(reply, sent_at, 0, &lease));
    leasehold_reply_free(reply);
    printf("holder: got a %lld ms lease on \"%s\"\n", (long long)(lease.expiration - sent_at), resource);
    return lease;
}

/* The holder's side of the driver: requests go out on the socket, events are counted. */
struct holder_io {
    int fd; /* -1 while the landlord is away */
    struct sockaddr_in addr;
    int renewals, failures, reconnects;
};

/* Kills the landlord without warning and starts it again on the same directory, once, at
 * KILL_AT. */
static void maybe_kill_landlord(struct holder_io *io) {
    if (KILL_AT < 0 || now_ms() < KILL_AT) return;
    KILL_AT = -1;
    printf("holder: killing the landlord (pid %d) with SIGKILL\n", (int)LANDLORD);
    kill(LANDLORD, SIGKILL);
    waitpid(LANDLORD, NULL, 0);
    LANDLORD = start_landlord(LISTENER, 2, io->fd);
    RESTARTS++;
}

/* Connects again after the landlord went away: the listening socket lives on in this process,
 * so the connection waits in its backlog until the restarted landlord accepts it. */
static void reconnect(struct holder_io *io) {
    if (io->fd >= 0) return;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&io->addr, sizeof io->addr) == 0) {
        io->fd = fd;
        io->reconnects++;
    } else if (fd >= 0) {
        close(fd);
    }
}

static void hang_up(struct holder_io *io) {
    if (io->fd >= 0) close(io->fd);
    io->fd = -1;
}

/* ANCHOR: holder */
static int32_t send_request(void *user_data, uint64_t landlord, uint64_t request_id, const uint8_t *data,
                            size_t len) {
    struct holder_io *io = (struct holder_io *)user_data;
    (void)landlord;
    (void)request_id;
    reconnect(io);
    if (io->fd >= 0 && send_frame(io->fd, data, len) == 0) return 0;
    hang_up(io);
    return 1; /* non-zero: an indefinite failure; the manager retries */
}

static void on_event(void *user_data, const leasehold_renewal_event *e) {
    struct holder_io *io = (struct holder_io *)user_data;
    if (e->kind == LEASEHOLD_RENEWAL_RENEWED) io->renewals++;
    if (e->kind == LEASEHOLD_RENEWAL_FAILED) {
        io->failures++;
        fprintf(stderr, "holder: renewal failed: %s\n", e->error_message ? e->error_message : "expired");
    }
}

/* Runs the renewal manager on this process's clock until `until`, with the socket as transport. */
static void drive_until(leasehold_renewal_manager *m, struct holder_io *io, int64_t until) {
    const char *who = "holder";
    for (;;) {
        int64_t now = now_ms();
        if (now >= until) break;
        maybe_kill_landlord(io);
        bool has = false;
        int64_t next = 0;
        CALL(who, leasehold_renewal_manager_drive(m, now, LEASEHOLD_ENCODING_BINARY, send_request, on_event, io,
                                                  &has, &next));
        int64_t wait = (has && next < until ? next : until) - now_ms();
        if (KILL_AT >= 0 && KILL_AT - now_ms() < wait) wait = KILL_AT - now_ms();
        if (io->fd < 0) {
            /* Away: the manager's retries reconnect. */
            struct timespec ts = {0, (wait > 0 ? (wait < 10 ? wait : 10) : 0) * 1000000L};
            nanosleep(&ts, NULL);
            continue;
        }
        struct pollfd pfd = {io->fd, POLLIN, 0};
        if (poll(&pfd, 1, wait > 0 ? (int)wait : 0) > 0) {
            uint8_t *in = NULL;
            size_t in_len = 0;
            if (recv_frame(io->fd, &in, &in_len) != 0) {
                printf("holder: the landlord went away; requests are retried on a new connection\n");
                hang_up(io);
                continue;
            }
            CALL(who, leasehold_renewal_manager_handle_reply_bytes(m, in, in_len, LEASEHOLD_ENCODING_BINARY,
                                                                   now_ms()));
            free(in);
        }
    }
}

/* ANCHOR_END: holder */

static int run_holder(struct holder_io *io) {
    const char *who = "holder";
    leasehold_lease printer = take_lease(io->fd, "printer", LEASE_MS);
    leasehold_lease scanner = take_lease(io->fd, "scanner", LEASE_MS / 2);
    (void)scanner; /* never renewed: the landlord expires it */

    /* The renewal manager keeps "printer" alive: it decides when to renew (early enough for a
     * round trip and retries), the host only carries bytes and runs the clock. */
    leasehold_renewal_manager_config cfg;
    CALL(who, leasehold_renewal_manager_config_default(&cfg));
    cfg.initial_rtt = 10; /* loopback, plus the landlord's fsync before it answers */
    cfg.min_rto = 50;
    cfg.max_retry_interval = 100;
    cfg.renew_divisor = 2; /* renew halfway: room for a retry on a loaded machine */
    leasehold_renewal_manager *m = NULL;
    CALL(who, leasehold_renewal_manager_new(&cfg, &m));
    CALL(who, leasehold_renewal_manager_renew_for(m, &printer, LEASEHOLD_FOREVER, LEASE_MS, now_ms()));
    drive_until(m, io, now_ms() + RUN_MS);

    /* Done: cancel through the manager (it sends the cancel) and wait for the answer. */
    leasehold_lease current;
    CALL(who, leasehold_renewal_manager_lease(m, &printer, &current));
    int64_t left = current.expiration - now_ms();
    CALL(who, leasehold_renewal_manager_cancel(m, &printer, now_ms()));
    /* The answer usually comes within a millisecond; on a loaded machine (or under a
     * sanitizer) it can take longer, so wait for it up to ten lease lengths. */
    leasehold_renewal_stats st;
    int64_t give_up = now_ms() + 10 * LEASE_MS;
    do {
        drive_until(m, io, now_ms() + LEASE_MS / 10);
        CALL(who, leasehold_renewal_manager_stats(m, &st));
    } while (st.leases_cancelled == 0 && now_ms() < give_up);
    leasehold_renewal_manager_free(m);
    printf("holder: renewed \"printer\" %d times (%lld ms left at the end, %d reconnection(s)), cancel %s\n",
           io->renewals, (long long)left, io->reconnects, st.leases_cancelled == 1 ? "confirmed" : "NOT confirmed");
    return (io->renewals >= 3 && io->failures == 0 && left > 0 && st.leases_cancelled == 1) ? 0 : 1;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* the two processes' lines interleave in order */
    signal(SIGPIPE, SIG_IGN);         /* a write to a killed landlord fails, it does not kill us */
    static char default_dir[4096];
    bool memory = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--memory") == 0) {
            memory = true;
        } else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc) {
            DATA_DIR = argv[++i];
        } else {
            char *end = NULL;
            long scale = strtol(argv[i], &end, 10);
            if (*end != '\0' || scale < 1 || scale > 20) {
                fprintf(stderr, "usage: %s [SCALE 1..20] [--data DIR] [--memory]\n", argv[0]);
                return 2;
            }
            LEASE_MS *= scale;
            RUN_MS *= scale;
        }
    }
    if (memory) {
        DATA_DIR = NULL;
    } else if (DATA_DIR == NULL) {
        char self[4096];
        snprintf(self, sizeof self, "%s", argv[0]);
        snprintf(default_dir, sizeof default_dir, "%s/landlord-data", dirname(self));
        DATA_DIR = default_dir;
    }
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0; /* any free port */
    socklen_t addr_len = sizeof addr;
    if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(listener, 4) != 0 || getsockname(listener, (struct sockaddr *)&addr, &addr_len) != 0) {
        perror("socket setup");
        return 1;
    }
    printf("libleasehold %s: landlord on 127.0.0.1:%u, %s\n", leasehold_version(), ntohs(addr.sin_port),
           DATA_DIR ? "durable" : "in memory (--memory)");
    LISTENER = listener;
    LANDLORD = start_landlord(listener, 1, -1);
    struct holder_io io;
    memset(&io, 0, sizeof io);
    io.addr = addr;
    io.fd = socket(AF_INET, SOCK_STREAM, 0);
    if (io.fd < 0 || connect(io.fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        perror("holder: connect");
        kill(LANDLORD, SIGKILL);
        waitpid(LANDLORD, NULL, 0);
        return 1;
    }
    /* A durable landlord is killed halfway through the run, and comes back from its store. */
    if (DATA_DIR != NULL) KILL_AT = now_ms() + RUN_MS / 2;
    int holder_rc = run_holder(&io);
    /* Give the unrenewed lease time to expire at the landlord before hanging up. */
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
    hang_up(&io);
    close(listener);
    int status = 0;
    waitpid(LANDLORD, &status, 0);
    int landlord_rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (DATA_DIR != NULL && RESTARTS != 1) landlord_rc = 1;
    printf("example: holder %s, landlord %s%s\n", holder_rc == 0 ? "ok" : "FAILED", landlord_rc == 0 ? "ok" : "FAILED",
           DATA_DIR ? " (killed with SIGKILL and restarted from its store)" : "");
    return holder_rc == 0 && landlord_rc == 0 ? 0 : 1;
}
