/*
 * The C binding's landlord served over HTTP/1.1 the way a C user without an HTTP library would
 * host it: one thread, poll(2) over the listening socket and the kept-alive connections, each
 * request answered with leasehold_landlord_handle_bytes (binary, or JSON for application/json)
 * in one write; expiry driven by leasehold_landlord_poll_timeout / _handle_timeout / _poll_expired
 * as poll's time-out. Only what the bench needs of HTTP: POST with Content-Length, keep-alive.
 * Prints "listening <port>" once bound.
 * Usage: e2e-c-server [PORT]
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "leasehold.h"

#define LEASE 600000
#define MAX_CONNS 64
#define MAX_BODY (2u << 20)

typedef struct {
    int fd;
    char *buf; /* bytes received and not yet answered */
    size_t len, cap;
} conn;

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void must(leasehold_status st, const char *what) {
    if (st != LEASEHOLD_STATUS_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, leasehold_status_name((int32_t)st),
                leasehold_last_error_message());
        exit(1);
    }
}

static int send_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Finds the end of the head ("\r\n\r\n") in buf[0..len); returns its length or 0. */
static size_t head_len(const char *buf, size_t len) {
    for (size_t i = 3; i < len; i++)
        if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r') return i + 1;
    return 0;
}

/* The value of header `name` in the head, or NULL; `*vlen` gets its length. */
static const char *header(const char *head, size_t hlen, const char *name, size_t *vlen) {
    size_t nl = strlen(name);
    const char *p = memchr(head, '\n', hlen), *end = head + hlen;
    while (p != NULL && p + 1 < end) {
        const char *line = p + 1;
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (eol == NULL) break;
        if ((size_t)(eol - line) > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0) {
            const char *v = line + nl + 1;
            while (v < eol && (*v == ' ' || *v == '\t')) v++;
            const char *ve = eol;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ')) ve--;
            *vlen = (size_t)(ve - v);
            return v;
        }
        p = eol;
    }
    return NULL;
}

/* Answers every complete request in c->buf; -1 closes the connection. */
static int serve(leasehold_landlord *ll, conn *c) {
    size_t off = 0;
    for (;;) {
        size_t hl = head_len(c->buf + off, c->len - off);
        if (hl == 0) break;
        const char *head = c->buf + off;
        size_t vl = 0;
        const char *v = header(head, hl, "Content-Length", &vl);
        if (v == NULL) return -1;
        unsigned long body_len = strtoul(v, NULL, 10);
        if (body_len > MAX_BODY) return -1;
        if (c->len - off - hl < body_len) break; /* body not all here yet */
        const char *ct = header(head, hl, "Content-Type", &vl);
        int json = ct != NULL && vl >= 16 && strncasecmp(ct, "application/json", 16) == 0;
        uint8_t *reply = NULL;
        size_t reply_len = 0;
        must(leasehold_landlord_handle_bytes(ll, (const uint8_t *)head + hl, body_len,
                                             json ? LEASEHOLD_ENCODING_JSON : LEASEHOLD_ENCODING_BINARY,
                                             now_ms(), &reply, &reply_len),
             "handle_bytes");
        char h[160];
        int n = snprintf(h, sizeof h, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n",
                         json ? "application/json" : "application/octet-stream", reply_len);
        /* Head and body in one write (apart, they would meet Nagle and the delayed ACK). */
        char *out = malloc((size_t)n + reply_len);
        if (out == NULL) exit(1);
        memcpy(out, h, (size_t)n);
        memcpy(out + n, reply, reply_len);
        leasehold_bytes_free(reply, reply_len);
        int rc = send_all(c->fd, out, (size_t)n + reply_len);
        free(out);
        if (rc != 0) return -1;
        off += hl + body_len;
    }
    memmove(c->buf, c->buf + off, c->len - off);
    c->len -= off;
    return 0;
}

static void expire(leasehold_landlord *ll) {
    must(leasehold_landlord_handle_timeout(ll, now_ms()), "handle_timeout");
    for (;;) {
        leasehold_expired e;
        bool found = false;
        must(leasehold_landlord_poll_expired(ll, &e, &found), "poll_expired");
        if (!found) break;
        leasehold_bytes_free(e.resource, e.resource_len);
    }
}

int main(int argc, char **argv) {
    uint8_t seed[LEASEHOLD_SEED_SIZE];
    FILE *r = fopen("/dev/urandom", "rb"); /* the core has no entropy of its own */
    if (r == NULL || fread(seed, 1, sizeof seed, r) != sizeof seed) return 1;
    fclose(r);
    leasehold_landlord_config *cfg = NULL;
    leasehold_policy *policy = NULL;
    leasehold_landlord *ll = NULL;
    must(leasehold_landlord_config_new(1, seed, sizeof seed, &cfg), "config");
    must(leasehold_policy_new_bounded(LEASE, LEASE, &policy), "policy");
    must(leasehold_landlord_new(cfg, policy, &ll), "landlord");
    leasehold_landlord_config_free(cfg);
    leasehold_policy_free(policy);

    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(argc > 1 ? (uint16_t)atoi(argv[1]) : 0);
    socklen_t al = sizeof a;
    if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 128) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &al) != 0) {
        perror("listen");
        return 1;
    }
    printf("listening %d\n", ntohs(a.sin_port));
    fflush(stdout);

    conn conns[MAX_CONNS];
    size_t nconns = 0;
    struct pollfd fds[MAX_CONNS + 1];
    for (;;) {
        bool has = false;
        int64_t at = 0;
        must(leasehold_landlord_poll_timeout(ll, &has, &at), "poll_timeout");
        int64_t wait = has ? at - now_ms() : -1;
        if (has && wait < 0) wait = 0;
        if (wait > 1000000) wait = 1000000;
        fds[0].fd = ls;
        fds[0].events = POLLIN;
        for (size_t i = 0; i < nconns; i++) {
            fds[i + 1].fd = conns[i].fd;
            fds[i + 1].events = POLLIN;
        }
        int n = poll(fds, nconns + 1, (int)wait);
        if (n < 0 && errno != EINTR) {
            perror("poll");
            return 1;
        }
        if (has && now_ms() >= at) expire(ll);
        if (n <= 0) continue;
        for (size_t i = nconns; i-- > 0;) {
            if (!(fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            conn *c = &conns[i];
            if (c->cap - c->len < 65536) {
                c->cap = c->cap * 2 + 65536;
                c->buf = realloc(c->buf, c->cap);
                if (c->buf == NULL) return 1;
            }
            ssize_t got = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
            int bad = got <= 0;
            if (!bad) {
                c->len += (size_t)got;
                bad = serve(ll, c) != 0;
            }
            if (bad) {
                close(c->fd);
                free(c->buf);
                conns[i] = conns[--nconns];
            }
        }
        if (fds[0].revents & POLLIN) {
            int fd = accept(ls, NULL, NULL);
            if (fd >= 0 && nconns == MAX_CONNS) {
                close(fd);
            } else if (fd >= 0) {
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                conns[nconns++] = (conn){fd, NULL, 0, 0};
            }
        }
    }
}
