/* udp_batch_limit: what the kernel's UDP path costs per datagram when a
 * sender hands it datagrams one per call, 64 per sendmmsg, or 64 per
 * sendmsg as one UDP_SEGMENT (GSO) super-datagram, and a receiver takes
 * them one per call, 64 per recvmmsg, or coalesced by UDP_GRO.
 *
 * It is the ceiling of a VXLAN datapath that runs in user space over a UDP
 * socket (issue 30: vnetd's uplink today costs the kernel's VXLAN path per
 * frame): the datagrams are sized as a VXLAN datagram of a given inner frame
 * would be, and carry a VXLAN header. tools/bench/vxlan/vnet-underlay-limit.sh
 * runs it between two namespaces.
 *
 *   udp_batch_limit send|recv one|mmsg|gso ADDRESS PORT BYTES [SECONDS]
 *     send: to ADDRESS:PORT for SECONDS (3), datagrams of BYTES (UDP payload;
 *           gso: 64 a call, fewer where 64 would pass 65,000 bytes)
 *     recv: bound to ADDRESS:PORT; counts from the first datagram for
 *           SECONDS, or until 0.2 s pass without one
 *   Prints one line: "<role> <how> bytes B datagrams N seconds S calls C".
 *
 * IPv4 only (the underlay of the bench). Exits 1 on a failed set-up call.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define BATCH 64 /* datagrams per call: vnetd's burst */
#define MAX_DATAGRAM 9000
#define GRO_BUFFER 65536

enum how { ONE, MMSG, GSO };

static char datagrams[BATCH][MAX_DATAGRAM];
static char gro_buffer[GRO_BUFFER];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char* what) {
    fprintf(stderr, "udp_batch_limit: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void set_int(int fd, int level, int name, int value, const char* what) {
    if (setsockopt(fd, level, name, &value, sizeof value) != 0) {
        die(what);
    }
}

static void fill_vxlan_headers(size_t bytes) {
    for (int i = 0; i < BATCH; i++) {
        memset(datagrams[i], 0x5a, bytes);
        /* RFC 7348: flags 0x08 (a valid VNI), VNI 100 in bytes 4-6. */
        memset(datagrams[i], 0, 8);
        datagrams[i][0] = 0x08;
        datagrams[i][6] = 100;
    }
}

/* What one UDP_SEGMENT send may carry: BATCH datagrams, fewer when they
 * would pass the 64 KiB of one IP packet (as a VXLAN sender must cut). */
static size_t gso_segments(size_t bytes) {
    const size_t fit = 65000 / bytes;
    return fit < BATCH ? fit : BATCH;
}

static void run_sender(int fd, enum how how, size_t bytes, double seconds, unsigned long long* n,
                       unsigned long long* calls) {
    struct iovec iov[BATCH];
    struct mmsghdr msgs[BATCH];
    memset(msgs, 0, sizeof msgs);
    for (int i = 0; i < BATCH; i++) {
        iov[i].iov_base = datagrams[i];
        iov[i].iov_len = bytes;
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    if (how == GSO) {
        /* Every BATCH datagrams go as one payload the kernel cuts into
         * `bytes`-sized datagrams after the stack (or the NIC does). */
        set_int(fd, IPPROTO_UDP, UDP_SEGMENT, (int)bytes, "UDP_SEGMENT");
    }
    const double end = now() + seconds;
    while (now() < end) {
        for (int k = 0; k < 16; k++) {
            (*calls)++;
            if (how == ONE) {
                if (send(fd, datagrams[0], bytes, 0) > 0) {
                    (*n)++;
                }
            } else if (how == MMSG) {
                const int sent = sendmmsg(fd, msgs, BATCH, 0);
                if (sent > 0) {
                    *n += (unsigned long long)sent;
                }
            } else {
                struct msghdr h = {.msg_iov = iov, .msg_iovlen = gso_segments(bytes)};
                const ssize_t sent = sendmsg(fd, &h, 0);
                if (sent > 0) {
                    *n += (unsigned long long)sent / bytes;
                }
            }
        }
    }
}

/* Returns the number of datagrams one receive call took (0: timed out). */
static unsigned receive_once(int fd, enum how how) {
    if (how == ONE) {
        return recv(fd, datagrams[0], MAX_DATAGRAM, 0) > 0 ? 1 : 0;
    }
    if (how == MMSG) {
        struct iovec iov[BATCH];
        struct mmsghdr msgs[BATCH];
        memset(msgs, 0, sizeof msgs);
        for (int i = 0; i < BATCH; i++) {
            iov[i].iov_base = datagrams[i];
            iov[i].iov_len = MAX_DATAGRAM;
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        const int got = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
        return got > 0 ? (unsigned)got : 0;
    }
    char control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = gro_buffer, .iov_len = GRO_BUFFER};
    struct msghdr h = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    const ssize_t got = recvmsg(fd, &h, 0);
    if (got <= 0) {
        return 0;
    }
    /* The segment size of a coalesced payload; absent: one datagram. */
    ssize_t segment = got;
    for (struct cmsghdr* c = CMSG_FIRSTHDR(&h); c != NULL; c = CMSG_NXTHDR(&h, c)) {
        if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) {
            int size;
            memcpy(&size, CMSG_DATA(c), sizeof size);
            segment = size > 0 ? size : got;
        }
    }
    return (unsigned)((got + segment - 1) / segment);
}

static double run_receiver(int fd, enum how how, double seconds, unsigned long long* n,
                           unsigned long long* calls) {
    if (how == GSO) {
        set_int(fd, IPPROTO_UDP, UDP_GRO, 1, "UDP_GRO");
    }
    const struct timeval idle = {.tv_sec = 0, .tv_usec = 200000};
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof idle) != 0) {
        die("SO_RCVTIMEO");
    }
    double start = 0;
    double end = 0;
    for (;;) {
        const unsigned got = receive_once(fd, how);
        if (got == 0) {
            if (start > 0) {
                break; /* the sender stopped */
            }
            continue; /* not started yet */
        }
        const double t = now();
        if (start == 0) {
            start = t;
            end = start + seconds;
        }
        *n += got;
        (*calls)++;
        if (t >= end) {
            break;
        }
    }
    return start > 0 ? now() - start : 0;
}

int main(int argc, char** argv) {
    if (argc < 6) {
        fprintf(stderr,
                "usage: udp_batch_limit send|recv one|mmsg|gso ADDRESS PORT BYTES [SECONDS]\n");
        return 2;
    }
    const int sender = strcmp(argv[1], "send") == 0;
    enum how how;
    if (strcmp(argv[2], "one") == 0) {
        how = ONE;
    } else if (strcmp(argv[2], "mmsg") == 0) {
        how = MMSG;
    } else if (strcmp(argv[2], "gso") == 0) {
        how = GSO;
    } else {
        fprintf(stderr, "udp_batch_limit: HOW is one, mmsg or gso, not %s\n", argv[2]);
        return 2;
    }
    const size_t bytes = strtoul(argv[5], NULL, 10);
    const double seconds = argc > 6 ? atof(argv[6]) : 3.0;
    if (bytes < 8 || bytes > MAX_DATAGRAM) {
        fprintf(stderr, "udp_batch_limit: BYTES must be 8..%d\n", MAX_DATAGRAM);
        return 2;
    }
    struct sockaddr_in address = {.sin_family = AF_INET,
                                  .sin_port = htons((uint16_t)atoi(argv[4]))};
    if (inet_pton(AF_INET, argv[3], &address.sin_addr) != 1) {
        fprintf(stderr, "udp_batch_limit: not an IPv4 address: %s\n", argv[3]);
        return 2;
    }
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) {
        die("socket");
    }
    /* Deep buffers: the receiver's socket is not what is measured. */
    set_int(fd, SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20, "SO_RCVBUFFORCE");
    set_int(fd, SOL_SOCKET, SO_SNDBUFFORCE, 64 << 20, "SO_SNDBUFFORCE");
    fill_vxlan_headers(bytes);
    unsigned long long n = 0;
    unsigned long long calls = 0;
    double elapsed;
    if (sender) {
        if (connect(fd, (struct sockaddr*)&address, sizeof address) != 0) {
            die("connect");
        }
        const double start = now();
        run_sender(fd, how, bytes, seconds, &n, &calls);
        elapsed = now() - start;
    } else {
        if (bind(fd, (struct sockaddr*)&address, sizeof address) != 0) {
            die("bind");
        }
        elapsed = run_receiver(fd, how, seconds, &n, &calls);
    }
    printf("%s %s bytes %zu datagrams %llu seconds %.3f calls %llu\n", argv[1], argv[2], bytes, n,
           elapsed, calls);
    close(fd);
    return 0;
}
