/* naive_forwarder: the "naive forwarder" peer of reference/peer-baselines.md.
 *
 * Creates two taps (IFF_TAP | IFF_NO_PI, no vnet header: no offloads, so the
 * stack hands it MTU-sized frames) and copies every frame from one to the
 * other with one read() and one write() per frame, in one thread, until
 * SIGINT/SIGTERM. That is the simplest correct user-space tap <-> tap
 * forwarder; vnetd's tap <-> tap mode is compared against it (vnet-bench
 * seed002).
 *
 *   naive_forwarder -a TAP_A -b TAP_B [-c cpu]
 *
 * Prints "naive_forwarder: a_to_b=N b_to_a=M write_failed=K" at exit.
 * Needs root (CAP_NET_ADMIN).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_FRAME 65536
#define DRAIN_BUDGET 64 /* frames per fd per poll round: neither side starves */

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

static void die(const char* what) {
    fprintf(stderr, "naive_forwarder: %s: %s\n", what, strerror(errno));
    exit(1);
}

static int open_tap(const char* name) {
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        die("open /dev/net/tun");
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    if (ioctl(fd, TUNSETIFF, &ifr) < 0)
        die("TUNSETIFF");
    return fd;
}

/* Moves up to DRAIN_BUDGET frames from `from` to `to`; returns how many. */
static unsigned forward(int from, int to, uint8_t* buf, uint64_t* moved, uint64_t* failed) {
    unsigned n = 0;
    for (; n < DRAIN_BUDGET; ++n) {
        ssize_t len = read(from, buf, MAX_FRAME);
        if (len <= 0)
            break;
        if (write(to, buf, (size_t)len) == len)
            ++*moved;
        else
            ++*failed;
    }
    return n;
}

int main(int argc, char** argv) {
    const char* a = NULL;
    const char* b = NULL;
    int cpu = -1;
    int c;
    while ((c = getopt(argc, argv, "a:b:c:h")) != -1) {
        switch (c) {
            case 'a':
                a = optarg;
                break;
            case 'b':
                b = optarg;
                break;
            case 'c':
                cpu = atoi(optarg);
                break;
            default:
                fprintf(stderr, "usage: %s -a TAP_A -b TAP_B [-c cpu]\n", argv[0]);
                return c == 'h' ? 0 : 2;
        }
    }
    if (!a || !b) {
        fprintf(stderr, "usage: %s -a TAP_A -b TAP_B [-c cpu]\n", argv[0]);
        return 2;
    }
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) < 0)
            die("sched_setaffinity");
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    const int fd_a = open_tap(a);
    const int fd_b = open_tap(b);
    static uint8_t buf[MAX_FRAME];
    uint64_t a_to_b = 0, b_to_a = 0, failed = 0;
    struct pollfd fds[2] = {{.fd = fd_a, .events = POLLIN}, {.fd = fd_b, .events = POLLIN}};
    while (!stop) {
        if (poll(fds, 2, 200) < 0) {
            if (errno == EINTR)
                continue;
            die("poll");
        }
        unsigned busy;
        do {
            busy = forward(fd_a, fd_b, buf, &a_to_b, &failed);
            busy += forward(fd_b, fd_a, buf, &b_to_a, &failed);
        } while (busy && !stop);
    }
    printf("naive_forwarder: a_to_b=%llu b_to_a=%llu write_failed=%llu\n",
           (unsigned long long)a_to_b, (unsigned long long)b_to_a, (unsigned long long)failed);
    close(fd_a);
    close(fd_b);
    return 0;
}
