/* bench/live upstream: a news feed where every response is new.
 *
 * GET /latest_news/<client>?v=<n> answers the feed as client <client> sees it at version n: a JSON
 * document with the newest WINDOW articles (ids n+WINDOW down to n+1, about 330 bytes each: ~50 KB),
 * so version n+1 adds one article on top and drops the oldest. The body names the client, so no two
 * clients ever get the same bytes. `&n=<count>` after the version sets the number of articles (1…WINDOW,
 * default WINDOW): bench/memory and bench/scale size their per-user documents with it. Headers: Content-Type application/json, Cache-Control no-cache
 * (as APIs send), and Body-Sha256: the RFC 9842 Available-Dictionary value of the body, so a load
 * generator can name the version it holds without hashing it.
 *
 * One thread per connection, blocking I/O, HTTP/1.1 keep-alive; GET requests without a body only.
 * Listens on 127.0.0.1:<port> (argv[1]). Build: cc -O2 -pthread feed_upstream.c -lcrypto.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define WINDOW 150
#define BODY_MAX (WINDOW * 512 + 1024)

static const char *SECTIONS[] = {"city", "world", "sport", "culture"};
static const char *WORDS[] = {
    "tram", "council", "budget", "river", "bridge", "school", "market", "station", "housing", "mayor", "vote",
    "plan", "route", "depot", "cost", "ward", "residents", "meeting", "transport", "proposal", "delay", "contract",
    "engineers", "survey", "traffic", "cyclists", "parking", "funding", "tender", "summer", "winter", "library",
    "museum", "festival", "police", "hospital", "airport", "harbour", "stadium", "park", "square", "tunnel",
    "election", "report", "inquiry", "court", "judge", "witness", "strike", "union", "rail", "bus", "ferry",
    "weather", "storm", "flood", "drought", "energy", "solar", "wind", "heat", "pipeline", "water", "waste"};
#define NWORDS (sizeof WORDS / sizeof WORDS[0])

/* Text that differs per article like real copy does: words drawn by a generator seeded with the id. */
static size_t summary(char *out, size_t room, long id) {
    unsigned long x = (unsigned long)id * 2654435761UL + 12345;
    size_t len = 0;
    for (int w = 0; w < 28 && len + 16 < room; w++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        len += (size_t)snprintf(out + len, room - len, w ? " %s" : "%s", WORDS[(x >> 33) % NWORDS]);
    }
    return len;
}

static size_t feed(char *out, const char *client, long n, long window) {
    size_t len = (size_t)snprintf(out, BODY_MAX, "{\"feed\":\"latest_news\",\"client\":\"%s\",\"version\":%ld,\"articles\":[",
                                  client, n);
    char words[400];
    for (long id = n + window; id > n; id--) {
        summary(words, sizeof words, id);
        len += (size_t)snprintf(out + len, BODY_MAX - len,
            "%s{\"id\":%ld,\"title\":\"Article %ld: the council votes on the new tram line, part %ld\","
            "\"summary\":\"%s\",\"minutes\":%ld,\"ward\":%ld,\"section\":\"%s\",\"comments\":%ld}",
            id == n + window ? "" : ",", id, id, id, words, 40 + id % 80, id % 23, SECTIONS[id % 4], (id * 7919) % 1000);
    }
    len += (size_t)snprintf(out + len, BODY_MAX - len, "]}");
    return len;
}

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void *serve(void *arg) {
    int fd = (int)(long)arg;
    char *body = malloc(BODY_MAX), *head = malloc(1024), in[8192];
    size_t have = 0;
    for (;;) {
        char *end;
        while (!(end = memmem(in, have, "\r\n\r\n", 4))) {
            if (have == sizeof in) goto done;
            ssize_t r = read(fd, in + have, sizeof in - have);
            if (r <= 0) goto done;
            have += (size_t)r;
        }
        size_t used = (size_t)(end + 4 - in);
        char client[64] = "anonymous";
        long n = 1, window = WINDOW;
        if (have > 17 && memcmp(in, "GET /latest_news/", 17) == 0) {
            size_t i = 0;
            const char *p = in + 17;
            while (i < sizeof client - 1 && p[i] && p[i] != '?' && p[i] != ' ' && p[i] != '/' && p[i] != '"' && p[i] != '\\')
                { client[i] = p[i]; i++; }
            client[i] = 0;
            const char *v = strstr(p, "?v=");
            if (v && v < end) n = atol(v + 3);
            const char *w = strstr(p, "&n=");
            if (w && w < end) window = atol(w + 3);
            if (window < 1 || window > WINDOW) window = WINDOW;
        }
        size_t len = feed(body, client, n, window);
        unsigned char digest[SHA256_DIGEST_LENGTH];
        SHA256((unsigned char *)body, len, digest);
        unsigned char b64[64];
        EVP_EncodeBlock(b64, digest, SHA256_DIGEST_LENGTH);
        int hl = snprintf(head, 1024,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-cache\r\nBody-Sha256: :%s:\r\n\r\n", len, b64);
        if (write_all(fd, head, (size_t)hl) || write_all(fd, body, len)) goto done;
        memmove(in, in + used, have - used);
        have -= used;
    }
done:
    close(fd);
    free(body);
    free(head);
    return NULL;
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    int port = argc > 1 ? atoi(argv[1]) : 8000;
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 1024)) { perror("bind/listen"); return 1; }
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c < 0) continue;
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 256 << 10);
        if (pthread_create(&t, &attr, serve, (void *)(long)c)) close(c);
        pthread_attr_destroy(&attr);
    }
}
