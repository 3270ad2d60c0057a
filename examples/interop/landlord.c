/* The C landlord of the interop test: serves POST over loopback HTTP, commands on stdin.
 *
 * Usage: landlord ID   (the line protocol is in examples/interop/README.md)
 * One poll(2) loop over the listening socket and stdin; each connection carries one request
 * (the reply says Connection: close). */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common.h"

#define MAX_REQUEST (1 << 20)

/* Reads one HTTP request from `fd`, answers it with the landlord, closes nothing. */
static void serve(int fd, leasehold_landlord *landlord) {
    static char buf[MAX_REQUEST + 4096];
    size_t got = 0;
    char *body = NULL;
    long want = -1;
    int json = 0;
    for (;;) {
        ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
        if (n <= 0) return;
        got += (size_t)n;
        buf[got] = '\0';
        if (!body && (body = strstr(buf, "\r\n\r\n")) != NULL) {
            body += 4;
            for (char *h = strstr(buf, "\r\n") + 2; h < body; h = strstr(h, "\r\n") + 2) {
                if (strncasecmp(h, "Content-Length:", 15) == 0) want = strtol(h + 15, NULL, 10);
                if (strncasecmp(h, "Content-Type:", 13) == 0) {
                    const char *v = h + 13;
                    while (*v == ' ') v++;
                    json = strncmp(v, "application/json", 16) == 0;
                }
            }
            if (want < 0 || want > MAX_REQUEST) {
                const char *bad = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
                if (write(fd, bad, strlen(bad)) < 0) return;
                return;
            }
        }
        if (body && (long)(buf + got - body) >= want) break;
        if (got == sizeof buf - 1) return;
    }
    uint8_t *reply = NULL;
    size_t reply_len = 0;
    if (leasehold_landlord_handle_bytes(landlord, (const uint8_t *)body, (size_t)want,
                                        json ? LEASEHOLD_ENCODING_JSON : LEASEHOLD_ENCODING_BINARY,
                                        now_ms(), &reply, &reply_len) != LEASEHOLD_STATUS_OK) {
        fail("handle_bytes");
        return;
    }
    char head[160];
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                      "Connection: close\r\n\r\n",
                      json ? "application/json" : "application/octet-stream", reply_len);
    if (write(fd, head, (size_t)hl) == hl) {
        if (write(fd, reply, reply_len) < 0) perror("write");
    }
    leasehold_bytes_free(reply, reply_len);
}

/* Answers one command line on stdout. */
static void command(char *line, leasehold_landlord *landlord) {
    char word[16], arg[64];
    if (sscanf(line, "%15s %63s", word, arg) != 2) {
        printf("error unknown command\n");
    } else if (strcmp(word, "grant") == 0) {
        int64_t now = now_ms();
        leasehold_grant g;
        leasehold_lease lease;
        char cookie[LEASEHOLD_COOKIE_HEX_SIZE], *text = NULL;
        uint8_t *bytes = NULL;
        size_t len = 0;
        if (leasehold_landlord_grant(landlord, (const uint8_t *)"interop", 7, strtoll(arg, NULL, 10),
                                     now, &g) != LEASEHOLD_STATUS_OK ||
            leasehold_landlord_lease(landlord, g.cookie, now, &lease) != LEASEHOLD_STATUS_OK ||
            leasehold_cookie_to_hex(g.cookie, cookie, sizeof cookie) != LEASEHOLD_STATUS_OK ||
            leasehold_lease_to_json(&lease, now, &text) != LEASEHOLD_STATUS_OK) {
            printf("error %s\n", leasehold_last_error_message());
        } else if (leasehold_lease_to_bytes(&lease, now, &bytes, &len) != LEASEHOLD_STATUS_OK) {
            printf("error %s\n", leasehold_last_error_message());
            leasehold_string_free(text);
        } else {
            printf("granted %s %lld %lld %s ", cookie, (long long)g.expiration, (long long)now, text);
            for (size_t i = 0; i < len; i++) printf("%02x", bytes[i]);
            printf("\n");
            leasehold_string_free(text);
            leasehold_bytes_free(bytes, len);
        }
    } else if (strcmp(word, "query") == 0) {
        leasehold_cookie c;
        int64_t expiration = 0;
        if (leasehold_cookie_from_hex(arg, strlen(arg), &c) != LEASEHOLD_STATUS_OK)
            printf("error %s\n", leasehold_last_error_message());
        else if (leasehold_landlord_get(landlord, c, now_ms(), &expiration, NULL, NULL) ==
                 LEASEHOLD_STATUS_OK)
            printf("expiration %lld\n", (long long)expiration);
        else
            printf("expiration none\n");
    } else {
        printf("error unknown command\n");
    }
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: landlord ID\n");
        return 2;
    }
    uint8_t seed[32];
    FILE *r = fopen("/dev/urandom", "rb");
    if (!r || fread(seed, 1, sizeof seed, r) != sizeof seed) {
        fprintf(stderr, "interop (c): cannot read /dev/urandom\n");
        return 1;
    }
    fclose(r);
    leasehold_landlord_config *config = NULL;
    leasehold_policy *policy = NULL;
    leasehold_landlord *landlord = NULL;
    if (leasehold_landlord_config_new(strtoull(argv[1], NULL, 10), seed, sizeof seed, &config) ||
        leasehold_policy_new_bounded(60000, 30000, &policy) ||
        leasehold_landlord_new(config, policy, &landlord))
        return fail("creating the landlord");
    leasehold_landlord_config_free(config);
    leasehold_policy_free(policy);

    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof addr;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(lfd, 16) != 0 ||
        getsockname(lfd, (struct sockaddr *)&addr, &alen) != 0) {
        perror("listen");
        return 1;
    }
    printf("url http://127.0.0.1:%d/lease\n", ntohs(addr.sin_port));
    fflush(stdout);

    char line[256];
    size_t have = 0;
    for (;;) {
        struct pollfd fds[2] = {{lfd, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) break;
        if (fds[0].revents & POLLIN) {
            int fd = accept(lfd, NULL, NULL);
            if (fd >= 0) {
                struct timeval tv = {5, 0};
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
                serve(fd, landlord);
                close(fd);
            }
        }
        if (fds[1].revents & (POLLIN | POLLHUP)) {
            ssize_t n = read(STDIN_FILENO, line + have, sizeof line - 1 - have);
            if (n <= 0) break; /* stdin closed: done */
            have += (size_t)n;
            line[have] = '\0';
            char *nl;
            while ((nl = strchr(line, '\n')) != NULL) {
                *nl = '\0';
                command(line, landlord);
                have -= (size_t)(nl + 1 - line);
                memmove(line, nl + 1, have + 1);
            }
            if (have == sizeof line - 1) have = 0; /* an overlong line: dropped */
        }
    }
    close(lfd);
    leasehold_landlord_free(landlord);
    return 0;
}
