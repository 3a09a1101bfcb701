/* udp_pingpong: the timestamping end of vnet-bench's VM-path latency rows.
 *
 * sockperf's client only accepts replies a sockperf server wrote (its
 * header's client flag is cleared by the server), so it cannot time a
 * reflector that sends each frame back unchanged but for its addresses
 * (vnet-pktgen --reflect). This does the same measurement as
 * `sockperf ping-pong`: one connected UDP socket sends a datagram of -m
 * bytes carrying a sequence number, waits for it to come back, and takes
 * the round trip from CLOCK_MONOTONIC just before send() and just after
 * recv(); one message in flight at a time. A reply with another sequence
 * number (a late one after a timeout) is skipped. Like sockperf, it reports
 * latency as half the round trip.
 *
 *   udp_pingpong -d ADDR -p PORT [-m bytes] [-t seconds] [-w warmup_s] [-c cpu]
 *
 * Prints one JSON line: {"samples":N,"lost":L,"p50_us":..,"p99_us":..,
 * "p999_us":..,"mean_us":..,"max_us":..} (one-way, i.e. RTT / 2).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES (8u * 1000u * 1000u)
#define MAX_MESSAGE 1472
#define REPLY_TIMEOUT_MS 100

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare_doubles(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

static double percentile(const double* sorted, size_t n, double p) {
    size_t i = (size_t)(p / 100.0 * (double)n);
    return sorted[i < n ? i : n - 1];
}

static void usage(void) {
    fprintf(stderr,
            "usage: udp_pingpong -d ADDR -p PORT [-m bytes] [-t seconds] [-w warmup_s] [-c cpu]\n");
    exit(2);
}

int main(int argc, char** argv) {
    const char* addr = NULL;
    int port = 0, size = 64, cpu = -1;
    double seconds = 5, warmup_s = 0.5;
    int opt;
    while ((opt = getopt(argc, argv, "d:p:m:t:w:c:")) != -1) {
        switch (opt) {
            case 'd':
                addr = optarg;
                break;
            case 'p':
                port = atoi(optarg);
                break;
            case 'm':
                size = atoi(optarg);
                break;
            case 't':
                seconds = atof(optarg);
                break;
            case 'w':
                warmup_s = atof(optarg);
                break;
            case 'c':
                cpu = atoi(optarg);
                break;
            default:
                usage();
        }
    }
    if (!addr || port <= 0 || port > 65535 || size < 8 || size > MAX_MESSAGE || seconds <= 0)
        usage();
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            perror("udp_pingpong: sched_setaffinity");
            return 1;
        }
    }
    struct sockaddr_in to;
    memset(&to, 0, sizeof to);
    to.sin_family = AF_INET;
    to.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr, &to.sin_addr) != 1)
        usage();
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr*)&to, sizeof to) != 0) {
        perror("udp_pingpong: socket/connect");
        return 1;
    }
    const struct timeval timeout = {0, REPLY_TIMEOUT_MS * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);

    double* samples = malloc(MAX_SAMPLES * sizeof *samples);
    if (!samples) {
        perror("udp_pingpong: malloc");
        return 1;
    }
    unsigned char out[MAX_MESSAGE], in[MAX_MESSAGE];
    memset(out, 0x5a, sizeof out);
    uint64_t seq = 0, lost = 0;
    size_t n = 0;
    const double start = now_s();
    const double measure_from = start + warmup_s, end = measure_from + seconds;
    for (;;) {
        ++seq;
        memcpy(out, &seq, sizeof seq);
        const double sent = now_s();
        if (sent >= end || n == MAX_SAMPLES)
            break;
        if (send(fd, out, (size_t)size, 0) != size) {
            perror("udp_pingpong: send");
            return 1;
        }
        for (;;) {
            const ssize_t got = recv(fd, in, sizeof in, 0);
            if (got < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    ++lost;
                    break;
                }
                perror("udp_pingpong: recv");
                return 1;
            }
            uint64_t echoed;
            if (got < (ssize_t)sizeof echoed)
                continue;
            memcpy(&echoed, in, sizeof echoed);
            if (echoed != seq)
                continue; /* a late reply to an earlier message */
            const double back = now_s();
            if (sent >= measure_from)
                samples[n++] = (back - sent) * 1e6 / 2;
            break;
        }
    }
    if (n == 0) {
        fprintf(stderr, "udp_pingpong: no reply from %s:%d (%llu lost)\n", addr, port,
                (unsigned long long)lost);
        return 1;
    }
    double sum = 0;
    for (size_t i = 0; i < n; ++i)
        sum += samples[i];
    qsort(samples, n, sizeof *samples, compare_doubles);
    printf(
        "{\"samples\":%zu,\"lost\":%llu,\"p50_us\":%.3f,\"p99_us\":%.3f,\"p999_us\":%.3f,"
        "\"mean_us\":%.3f,\"max_us\":%.3f}\n",
        n, (unsigned long long)lost, percentile(samples, n, 50), percentile(samples, n, 99),
        percentile(samples, n, 99.9), sum / (double)n, samples[n - 1]);
    free(samples);
    return 0;
}
