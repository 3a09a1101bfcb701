/* tap_write_limit: the "raw limit" peer of reference/peer-baselines.md.
 *
 * A tight loop of write() of one prebuilt frame, behind a 12-byte vnet header
 * (all zero: no offload), to a tap opened O_NONBLOCK with IFF_VNET_HDR, for D
 * seconds on one core. It is the ceiling for any userspace writer into a tap:
 * tun runs its whole receive path per write (tun_get_user with more=false,
 * kernel-datapath.md §3.1), so vnetd's tap TX is compared against this.
 *
 * By default it moves itself into a fresh network namespace (unshare), where
 * the tap is the only device and the stack drops the frames (unknown
 * destination MAC) right after the tap counts them. The tap's own count,
 * rx_packets + rx_dropped, is printed next to the count of successful writes.
 *
 *   tap_write_limit [-d seconds] [-s frame bytes] [-n] [-u batch] [-c cpu]
 *                   [-i ifname] [-k] [-x object[:section]]
 *     -n  open the tap with IFF_NAPI
 *     -u  io_uring: `batch` IORING_OP_WRITE per io_uring_enter (RWF_NOWAIT)
 *     -k  keep the current network namespace (no unshare)
 *     -x  attach this XDP program to the tap in native mode before writing
 *         (e.g. build/bpf/xdp_drop.bpf.o; the section defaults to the first
 *         program): the "raw limit, native XDP_DROP" row
 *
 * Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN for unshare).
 */
#define _GNU_SOURCE
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <liburing.h>
#include <limits.h>
#include <linux/if_link.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define VNET_HDR_LEN 12
#define MAX_FRAME 65535

struct options {
    double seconds;
    size_t frame_size;
    int napi;
    unsigned batch; /* 0: write() loop */
    int cpu;
    int keep_netns;
    const char* xdp; /* object[:section], or NULL */
    char ifname[IFNAMSIZ];
};

static void die(const char* what) {
    fprintf(stderr, "tap_write_limit: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int open_tap(struct options* o) {
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        die("open /dev/net/tun");
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", o->ifname);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | (o->napi ? IFF_NAPI : 0);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0)
        die("TUNSETIFF");
    snprintf(o->ifname, IFNAMSIZ, "%s", ifr.ifr_name);
    int hdr = VNET_HDR_LEN;
    if (ioctl(fd, TUNSETVNETHDRSZ, &hdr) < 0)
        die("TUNSETVNETHDRSZ");
    int sndbuf = INT_MAX; /* tun_can_build_skb needs it */
    if (ioctl(fd, TUNSETSNDBUF, &sndbuf) < 0)
        die("TUNSETSNDBUF");

    int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock < 0)
        die("socket");
    if (ioctl(sock, SIOCGIFFLAGS, &ifr) < 0)
        die("SIOCGIFFLAGS");
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(sock, SIOCSIFFLAGS, &ifr) < 0)
        die("SIOCSIFFLAGS");
    close(sock);
    return fd;
}

/* Loads `spec` (object[:section]) and attaches its program to the tap in
 * native (driver) mode: tun runs it on every written frame in
 * tun_build_skb. The object stays loaded until exit; closing the tap
 * detaches it. */
static void attach_xdp(const char* spec, const char* ifname) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", spec);
    const char* section = NULL;
    char* colon = strrchr(path, ':');
    if (colon) {
        *colon = '\0';
        section = colon + 1;
    }
    struct bpf_object* obj = bpf_object__open_file(path, NULL);
    if (!obj || libbpf_get_error(obj)) {
        errno = obj ? (int)-libbpf_get_error(obj) : EINVAL;
        die("bpf_object__open_file");
    }
    int err = bpf_object__load(obj);
    if (err) {
        errno = -err;
        die("bpf_object__load");
    }
    struct bpf_program* prog = NULL;
    struct bpf_program* p;
    bpf_object__for_each_program(p, obj) {
        if (!section || strcmp(bpf_program__section_name(p), section) == 0) {
            prog = p;
            break;
        }
    }
    if (!prog) {
        errno = ENOENT;
        die("no such XDP program in the object");
    }
    const int ifindex = (int)if_nametoindex(ifname);
    if (ifindex == 0)
        die("if_nametoindex");
    err = bpf_xdp_attach(ifindex, bpf_program__fd(prog), XDP_FLAGS_DRV_MODE, NULL);
    if (err) {
        errno = -err;
        die("bpf_xdp_attach (native)");
    }
}

/* rx_packets + rx_dropped of the tap, read over netlink (getifaddrs), so it
 * works in the unshared namespace where /sys still shows the old one. */
static uint64_t tap_rx_count(const char* ifname) {
    struct ifaddrs* list;
    uint64_t count = 0;
    if (getifaddrs(&list) < 0)
        die("getifaddrs");
    for (struct ifaddrs* a = list; a; a = a->ifa_next) {
        if (a->ifa_addr && a->ifa_addr->sa_family == AF_PACKET && a->ifa_data &&
            strcmp(a->ifa_name, ifname) == 0) {
            const struct rtnl_link_stats* s = a->ifa_data;
            count = (uint64_t)s->rx_packets + s->rx_dropped;
        }
    }
    freeifaddrs(list);
    return count;
}

/* IPv4/UDP to a MAC nobody has: counted by the tap, then dropped by the
 * stack as PACKET_OTHERHOST. */
static void build_packet(uint8_t* buf, size_t frame_size) {
    memset(buf, 0, VNET_HDR_LEN + frame_size);
    uint8_t* f = buf + VNET_HDR_LEN;
    const uint8_t dst[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
    const uint8_t src[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    f[12] = 0x08;
    f[13] = 0x00;
    const size_t ip_len = frame_size - 14;
    uint8_t* ip = f + 14;
    ip[0] = 0x45;
    ip[2] = (uint8_t)(ip_len >> 8);
    ip[3] = (uint8_t)ip_len;
    ip[8] = 64;
    ip[9] = 17;
    const uint8_t saddr[4] = {10, 0, 0, 1}, daddr[4] = {10, 0, 0, 2};
    memcpy(ip + 12, saddr, 4);
    memcpy(ip + 16, daddr, 4);
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2)
        sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    ip[10] = (uint8_t)(~sum >> 8);
    ip[11] = (uint8_t)~sum;
    uint8_t* udp = ip + 20;
    udp[0] = 0x30, udp[1] = 0x39, udp[2] = 0x30, udp[3] = 0x3a;
    udp[4] = (uint8_t)((ip_len - 20) >> 8);
    udp[5] = (uint8_t)(ip_len - 20);
}

static void run_write_loop(int fd, const uint8_t* buf, size_t len, double seconds, uint64_t* ok,
                           uint64_t* failed) {
    const double end = now_seconds() + seconds;
    do {
        for (int i = 0; i < 1024; ++i) {
            if (write(fd, buf, len) == (ssize_t)len)
                ++*ok;
            else
                ++*failed;
        }
    } while (now_seconds() < end);
}

static void run_uring_loop(int fd, const uint8_t* buf, size_t len, unsigned batch, double seconds,
                           uint64_t* ok, uint64_t* failed) {
    struct io_uring ring;
    int ret = io_uring_queue_init(batch, &ring, 0);
    if (ret < 0) {
        errno = -ret;
        die("io_uring_queue_init");
    }
    if (io_uring_register_files(&ring, &fd, 1) < 0)
        die("io_uring_register_files");
    const double end = now_seconds() + seconds;
    do {
        for (int rep = 0; rep < 16; ++rep) {
            for (unsigned i = 0; i < batch; ++i) {
                struct io_uring_sqe* sqe = io_uring_get_sqe(&ring);
                io_uring_prep_write(sqe, 0, buf, (unsigned)len, 0);
                sqe->flags |= IOSQE_FIXED_FILE;
                sqe->rw_flags = RWF_NOWAIT;
            }
            ret = io_uring_submit_and_wait(&ring, batch);
            if (ret < 0 && ret != -EINTR) {
                errno = -ret;
                die("io_uring_submit_and_wait");
            }
            unsigned head, seen = 0;
            struct io_uring_cqe* cqe;
            io_uring_for_each_cqe(&ring, head, cqe) {
                if (cqe->res == (int)len)
                    ++*ok;
                else
                    ++*failed;
                ++seen;
            }
            io_uring_cq_advance(&ring, seen);
        }
    } while (now_seconds() < end);
    io_uring_queue_exit(&ring);
}

int main(int argc, char** argv) {
    struct options o = {.seconds = 5, .frame_size = 64, .cpu = -1};
    snprintf(o.ifname, IFNAMSIZ, "twl%d", (int)getpid() % 100000);
    int c;
    while ((c = getopt(argc, argv, "d:s:nu:c:i:kx:h")) != -1) {
        switch (c) {
            case 'd':
                o.seconds = atof(optarg);
                break;
            case 's':
                o.frame_size = strtoul(optarg, NULL, 0);
                break;
            case 'n':
                o.napi = 1;
                break;
            case 'u':
                o.batch = (unsigned)strtoul(optarg, NULL, 0);
                break;
            case 'c':
                o.cpu = atoi(optarg);
                break;
            case 'i':
                snprintf(o.ifname, IFNAMSIZ, "%s", optarg);
                break;
            case 'k':
                o.keep_netns = 1;
                break;
            case 'x':
                o.xdp = optarg;
                break;
            default:
                fprintf(stderr,
                        "usage: %s [-d seconds] [-s frame bytes] [-n] [-u batch] [-c cpu] "
                        "[-i ifname] [-k] [-x object[:section]]\n",
                        argv[0]);
                return c == 'h' ? 0 : 2;
        }
    }
    if (o.frame_size < 42 || o.frame_size > MAX_FRAME - VNET_HDR_LEN) {
        fprintf(stderr, "tap_write_limit: -s must be 42..%d\n", MAX_FRAME - VNET_HDR_LEN);
        return 2;
    }
    if (!o.keep_netns && unshare(CLONE_NEWNET) < 0)
        die("unshare(CLONE_NEWNET)");
    if (o.cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(o.cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) < 0)
            die("sched_setaffinity");
    }

    const int fd = open_tap(&o);
    if (o.xdp)
        attach_xdp(o.xdp, o.ifname);
    static uint8_t buf[MAX_FRAME];
    build_packet(buf, o.frame_size);
    const size_t len = VNET_HDR_LEN + o.frame_size;

    uint64_t ok = 0, failed = 0;
    const uint64_t rx_before = tap_rx_count(o.ifname);
    const double start = now_seconds();
    if (o.batch > 0)
        run_uring_loop(fd, buf, len, o.batch, o.seconds, &ok, &failed);
    else
        run_write_loop(fd, buf, len, o.seconds, &ok, &failed);
    const double elapsed = now_seconds() - start;
    const uint64_t rx = tap_rx_count(o.ifname) - rx_before;

    char path[32];
    if (o.batch > 0)
        snprintf(path, sizeof path, "io_uring/%u", o.batch);
    else
        snprintf(path, sizeof path, "write");
    printf(
        "tap_write_limit: %s frame=%zuB napi=%d xdp=%s path=%s seconds=%.2f writes_ok=%llu "
        "failed=%llu Mpps=%.3f tap_rx+dropped=%llu tap_Mpps=%.3f\n",
        o.ifname, o.frame_size, o.napi, o.xdp ? o.xdp : "none", path, elapsed,
        (unsigned long long)ok, (unsigned long long)failed, (double)ok / elapsed / 1e6,
        (unsigned long long)rx, (double)rx / elapsed / 1e6);
    close(fd);
    return 0;
}
