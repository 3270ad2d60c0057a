/* The C holder of the interop test: reads a lease in DURATION form, renews it over HTTP.
 *
 * Usage: holder URL LEASE.json LEASE.hex RENEW_MS json|binary
 * URL is http://127.0.0.1:PORT/PATH (loopback, IPv4). The line protocol is in
 * examples/interop/README.md. HTTP is a minimal HTTP/1.1 POST over a plain socket. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common.h"

#define MAX_FILE 4096
#define MAX_REPLY 65536

/* Reads a whole small file into buf (NUL-terminated, trailing white space removed). */
static int read_file(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) n--;
    buf[n] = '\0';
    return (int)n;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int from_hex(const char *hex, uint8_t *out, size_t cap) {
    size_t len = strlen(hex);
    if (len % 2 != 0 || len / 2 > cap) return -1;
    for (size_t i = 0; i < len / 2; i++) {
        int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return -1;
        out[i] = (uint8_t)(hi * 16 + lo);
    }
    return (int)(len / 2);
}

/* POSTs `body` to http://127.0.0.1:port/path and copies the reply body into `reply`.
 * Returns the body's length, or -1. */
static long http_post(const char *url, const uint8_t *body, size_t len, const char *ctype,
                      uint8_t *reply, size_t cap) {
    char host[64];
    int port = 0, consumed = 0;
    if (sscanf(url, "http://%63[0-9.]:%d%n", host, &port, &consumed) != 2 || port <= 0) {
        fprintf(stderr, "interop (c): not an http://IPv4:PORT/... URL: %s\n", url);
        return -1;
    }
    const char *path = url + consumed;
    if (*path == '\0') path = "/";
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) return -1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        perror("connect");
        close(fd);
        return -1;
    }
    char head[256];
    int hl = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: %s\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                      path, host, port, ctype, len);
    if (hl < 0 || (size_t)hl >= sizeof head || write(fd, head, (size_t)hl) != hl ||
        write(fd, body, len) != (ssize_t)len) {
        close(fd);
        return -1;
    }
    /* Read until the headers and Content-Length bytes of body are in (or the peer closes). */
    static char buf[MAX_REPLY + 1024];
    size_t got = 0;
    long want = -1;
    char *start = NULL;
    for (;;) {
        ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
        if (n <= 0) break;
        got += (size_t)n;
        buf[got] = '\0';
        if (!start && (start = strstr(buf, "\r\n\r\n")) != NULL) {
            start += 4;
            /* A 200, or a 4xx that carries the landlord's wire reply (the request's content
             * type: leasehold-server answers "unknown lease" with a 404 and the reply), is the
             * landlord's definite answer; anything else (a 5xx, a proxy's page) is no answer at
             * all, an indefinite failure (docs/server-transports.md). */
            int status = 0;
            if (strncmp(buf, "HTTP/1.", 7) == 0) status = atoi(buf + 9);
            int wire_type = 0;
            for (char *h = buf; h < start; h = strstr(h, "\r\n") + 2) {
                if (strncasecmp(h, "Content-Length:", 15) == 0) want = strtol(h + 15, NULL, 10);
                if (strncasecmp(h, "Content-Type:", 13) == 0) {
                    const char *v = h + 13;
                    while (*v == ' ') v++;
                    wire_type = strncasecmp(v, ctype, strlen(ctype)) == 0;
                }
            }
            if (!(status == 200 || (status >= 400 && status < 500 && wire_type))) {
                fprintf(stderr, "interop (c): server answered %.40s (no wire reply)\n", buf);
                close(fd);
                return -1;
            }
        }
        if (start && want >= 0 && (size_t)(buf + got - start) >= (size_t)want) break;
        if (got == sizeof buf - 1) break;
    }
    close(fd);
    if (!start) return -1;
    long have = (long)(buf + got - start);
    if (want < 0) want = have;
    if (have < want || (size_t)want > cap) return -1;
    memcpy(reply, start, (size_t)want);
    return want;
}

int main(int argc, char **argv) {
    if (argc != 6 || (strcmp(argv[5], "json") != 0 && strcmp(argv[5], "binary") != 0)) {
        fprintf(stderr, "usage: holder URL LEASE.json LEASE.hex RENEW_MS json|binary\n");
        return 2;
    }
    const char *url = argv[1];
    int64_t renew = strtoll(argv[4], NULL, 10);
    int json_wire = strcmp(argv[5], "json") == 0;
    int32_t encoding = json_wire ? LEASEHOLD_ENCODING_JSON : LEASEHOLD_ENCODING_BINARY;
    static char text[MAX_FILE], hex[MAX_FILE];
    uint8_t bytes[MAX_FILE / 2];
    int text_len = read_file(argv[2], text, sizeof text);
    if (text_len < 0 || read_file(argv[3], hex, sizeof hex) < 0) return 1;
    int bytes_len = from_hex(hex, bytes, sizeof bytes);
    if (bytes_len < 0) {
        fprintf(stderr, "interop (c): bad hex in %s\n", argv[3]);
        return 1;
    }

    /* Read both forms at one `now`, and write them back at that same `now`. */
    int64_t now = now_ms();
    leasehold_lease from_json, from_bytes;
    if (leasehold_lease_from_json(text, (size_t)text_len, now, &from_json) != LEASEHOLD_STATUS_OK)
        return fail("reading the JSON form");
    if (leasehold_lease_from_bytes(bytes, (size_t)bytes_len, now, &from_bytes) !=
        LEASEHOLD_STATUS_OK)
        return fail("reading the binary form");
    printf("runtime c\nread_now %lld\n", (long long)now);
    printf("read_json %lld\nread_hex %lld\n", (long long)from_json.expiration,
           (long long)from_bytes.expiration);
    char *reser = NULL;
    if (leasehold_lease_to_json(&from_json, now, &reser) != LEASEHOLD_STATUS_OK)
        return fail("to_json");
    printf("reser_json %s\n", reser);
    leasehold_string_free(reser);
    uint8_t *rb = NULL;
    size_t rl = 0;
    if (leasehold_lease_to_bytes(&from_bytes, now, &rb, &rl) != LEASEHOLD_STATUS_OK)
        return fail("to_bytes");
    print_hex("reser_hex", rb, rl);
    leasehold_bytes_free(rb, rl);

    /* Renew over HTTP; the new expiration counts from when the request was sent. */
    leasehold_request *request = NULL;
    uint8_t *msg = NULL;
    size_t msg_len = 0;
    if (leasehold_request_new_renew(1, from_json.cookie, renew, &request) != LEASEHOLD_STATUS_OK)
        return fail("renew request");
    leasehold_status st = leasehold_request_encode(request, encoding, &msg, &msg_len);
    leasehold_request_free(request);
    if (st != LEASEHOLD_STATUS_OK) return fail("encoding the request");
    static uint8_t body[MAX_REPLY];
    int64_t sent_at = now_ms();
    long body_len = http_post(url, msg, msg_len,
                              json_wire ? "application/json" : "application/octet-stream", body,
                              sizeof body);
    int64_t received_at = now_ms();
    leasehold_bytes_free(msg, msg_len);
    if (body_len < 0) {
        fprintf(stderr, "interop (c): POST %s failed\n", url);
        return 1;
    }
    leasehold_reply *reply = NULL;
    if (leasehold_reply_decode(body, (size_t)body_len, encoding, NULL, &reply) !=
        LEASEHOLD_STATUS_OK)
        return fail("decoding the reply");
    enum leasehold_reply_op op;
    int64_t granted = 0;
    st = leasehold_reply_get_op(reply, &op);
    if (st == LEASEHOLD_STATUS_OK && op == LEASEHOLD_REPLY_RENEWED)
        st = leasehold_reply_duration(reply, &granted);
    else if (st == LEASEHOLD_STATUS_OK) {
        int32_t code = 0;
        char *message = NULL;
        leasehold_reply_error(reply, &code, &message);
        fprintf(stderr, "interop (c): renewal refused (op %d, code %d): %s\n", (int)op, (int)code,
                message ? message : "");
        leasehold_string_free(message);
        leasehold_reply_free(reply);
        return 1;
    }
    leasehold_reply_free(reply);
    if (st != LEASEHOLD_STATUS_OK) return fail("reading the reply");
    leasehold_lease renewed;
    if (leasehold_lease_from_grant(from_json.landlord, from_json.cookie, sent_at, granted,
                                   &renewed) != LEASEHOLD_STATUS_OK)
        return fail("lease_from_grant");
    printf("sent_at %lld\nrtt %lld\ngranted %lld\nrenewed %lld\n", (long long)sent_at,
           (long long)(received_at - sent_at), (long long)granted, (long long)renewed.expiration);
    now = now_ms();
    printf("write_now %lld\n", (long long)now);
    return print_forms(&renewed, now, "json", "hex");
}
