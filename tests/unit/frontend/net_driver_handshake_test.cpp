// NetDriver's bring-up against a scripted back end on a socketpair: the
// sequence of requests, the features it settles on, what it tells the back
// end about memory and rings, and that it refuses malformed replies.
#include "frontend/net_driver.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <array>
#include <thread>
#include <variant>
#include <vector>

#include "vhost_user/connection.hpp"

namespace vnet::frontend {
namespace {

using vhost_user::Message;
using vhost_user::MessageHeader;
using vhost_user::ProtocolFeature;
using vhost_user::ProtocolFeatureSet;
using vhost_user::Request;
using virtio::Feature;
using virtio::FeatureSet;

enum class Fault { none, reply_flags, reply_size, nack };

struct Received {
    Request request;
    uint32_t flags;
};

// Answers like DPDK's vhost library would, records what it got, and can
// spoil the reply to one request.
class ScriptedBackend {
public:
    FeatureSet offered{Feature::version_1, Feature::ring_event_idx, Feature::net_mrg_rxbuf,
                       Feature::net_csum, Feature::vhost_user_protocol_features};
    ProtocolFeatureSet protocol_offered{ProtocolFeature::mq, ProtocolFeature::reply_ack,
                                        ProtocolFeature::status, ProtocolFeature::config};
    Request faulty_request = Request::none;
    Fault fault = Fault::none;

    std::vector<Received> log;
    uint64_t acked_features = 0;
    uint64_t acked_protocol = 0;
    vhost_user::MemoryTable table{};
    int mem_fd_seals = 0;
    std::vector<vhost_user::VringAddr> addrs;
    std::vector<vhost_user::VringState> nums;
    std::vector<vhost_user::VringState> bases;
    size_t fds_with_kick_call = 0;

    void run(int fd) {
        for (;;) {
            Message m;
            if (vhost_user::receive_message(fd, m, std::chrono::seconds(5)) !=
                vhost_user::ReceiveResult::message) {
                return;
            }
            log.push_back({m.request(), m.header.flags});
            handle(fd, m);
        }
    }

private:
    void reply(int fd, Request r, const void* payload, uint32_t size) {
        uint32_t flags = vhost_user::kReplyFlags;
        if (r == faulty_request && fault == Fault::reply_flags) {
            flags |= MessageHeader::kFlagNeedReply;
        }
        if (r == faulty_request && fault == Fault::reply_size) {
            size = 4;
        }
        vhost_user::send_message(fd, r, flags, payload, size, {});
    }
    void reply_u64(int fd, Request r, uint64_t v) { reply(fd, r, &v, sizeof v); }

    void handle(int fd, Message& m) {
        const Request r = m.request();
        uint64_t u64 = 0;
        switch (r) {
            case Request::get_features:
                return reply_u64(fd, r, offered.bits());
            case Request::get_protocol_features:
                return reply_u64(fd, r, protocol_offered.bits());
            case Request::get_status:
                return reply_u64(fd, r, status_);
            case Request::get_vring_base: {
                vhost_user::VringState s{};
                m.read_payload(s);
                return reply(fd, r, &s, sizeof s);
            }
            case Request::set_features:
                m.read_payload(acked_features);
                break;
            case Request::set_protocol_features:
                m.read_payload(acked_protocol);
                break;
            case Request::set_status:
                m.read_payload(u64);
                status_ = u64;
                break;
            case Request::set_mem_table:
                std::memcpy(&table, m.payload.data(), std::min<size_t>(m.size(), sizeof table));
                if (m.fd_count == 1) {
                    mem_fd_seals = ::fcntl(m.fds[0].get(), F_GET_SEALS);
                }
                break;
            case Request::set_vring_num:
            case Request::set_vring_base: {
                vhost_user::VringState st{};
                m.read_payload(st);
                (r == Request::set_vring_num ? nums : bases).push_back(st);
                break;
            }
            case Request::set_vring_addr: {
                vhost_user::VringAddr a{};
                m.read_payload(a);
                addrs.push_back(a);
                break;
            }
            case Request::set_vring_kick:
            case Request::set_vring_call:
                fds_with_kick_call += m.fd_count;
                break;
            default:
                break;
        }
        if (m.needs_reply()) {
            reply_u64(fd, r, r == faulty_request && fault == Fault::nack ? 1 : 0);
        }
    }

    uint64_t status_ = 0;
};

struct Harness {
    Harness() {
        int sv[2];
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        driver_end.reset(sv[0]);
        backend_end.reset(sv[1]);
    }
    ~Harness() { join(); }
    void start() {
        thread = std::thread([this] { backend.run(backend_end.get()); });
    }
    void join() {
        if (thread.joinable()) {
            thread.join();
        }
    }
    FrontendSession session() { return FrontendSession(std::move(driver_end), "test-socket"); }

    ScriptedBackend backend;
    UniqueFd driver_end;
    UniqueFd backend_end;
    std::thread thread;
};

NetDriverConfig config_wanting(FeatureSet wanted) {
    NetDriverConfig c;
    c.queue_size = 64;
    c.wanted_features = wanted;
    return c;
}

TEST(NetDriverHandshake, follows_the_virtio_user_sequence_and_acks_every_request) {
    Harness h;
    h.start();
    {
        NetDriver driver(h.session(),
                         config_wanting({Feature::version_1, Feature::ring_event_idx,
                                         Feature::net_mrg_rxbuf, Feature::net_host_tso4}));
        EXPECT_TRUE(driver.stop());
    }
    h.join();

    const std::vector<Request> expected{
        Request::set_owner,
        Request::get_features,
        Request::get_protocol_features,
        Request::set_protocol_features,
        Request::set_status,
        Request::set_features,
        Request::set_status,
        Request::get_status,
        Request::set_mem_table,
        Request::set_vring_call,
        Request::set_vring_num,
        Request::set_vring_base,
        Request::set_vring_addr,
        Request::set_vring_kick,
        Request::set_vring_call,
        Request::set_vring_num,
        Request::set_vring_base,
        Request::set_vring_addr,
        Request::set_vring_kick,
        Request::set_vring_enable,
        Request::set_vring_enable,
        Request::set_status,
        Request::set_vring_enable,
        Request::get_vring_base,
        Request::set_vring_enable,
        Request::get_vring_base,
    };
    std::vector<Request> got;
    for (const Received& r : h.backend.log) {
        got.push_back(r.request);
    }
    ASSERT_EQ(got, expected);

    // NEED_REPLY on everything without its own reply once REPLY_ACK is in
    // force, i.e. after SET_PROTOCOL_FEATURES; never on requests that reply.
    bool ack_in_force = false;
    for (const Received& r : h.backend.log) {
        const bool has_own_reply =
            r.request == Request::get_features || r.request == Request::get_protocol_features ||
            r.request == Request::get_status || r.request == Request::get_vring_base;
        const bool need_reply = (r.flags & MessageHeader::kFlagNeedReply) != 0;
        EXPECT_EQ(r.flags & MessageHeader::kVersionMask, MessageHeader::kVersion);
        EXPECT_EQ(need_reply, ack_in_force && !has_own_reply) << vhost_user::to_string(r.request);
        if (r.request == Request::set_protocol_features) {
            ack_in_force = true;
        }
    }
}

TEST(NetDriverHandshake, negotiates_wanted_and_offered_and_acks_protocol_features) {
    Harness h;
    h.start();
    {
        NetDriver driver(h.session(), config_wanting({Feature::version_1, Feature::ring_event_idx,
                                                      Feature::net_host_tso4}));
        const FeatureSet expected{Feature::version_1, Feature::ring_event_idx,
                                  Feature::vhost_user_protocol_features};
        EXPECT_EQ(driver.negotiated_features(), expected);
        EXPECT_FALSE(driver.mrg_rxbuf());
        EXPECT_TRUE(driver.tx_ring<DriverSplitRing>().event_idx());
    }
    h.join();
    EXPECT_EQ(FeatureSet(h.backend.acked_features),
              (FeatureSet{Feature::version_1, Feature::ring_event_idx,
                          Feature::vhost_user_protocol_features}));
    // MQ and CONFIG are offered but not used by one queue pair.
    EXPECT_EQ(ProtocolFeatureSet(h.backend.acked_protocol),
              (ProtocolFeatureSet{ProtocolFeature::reply_ack, ProtocolFeature::status}));
}

TEST(NetDriverHandshake, shares_one_sealed_memfd_region_with_gpa_equal_to_our_address) {
    Harness h;
    h.start();
    uint64_t tx_desc = 0;
    {
        NetDriver driver(h.session(), config_wanting({Feature::version_1}));
        tx_desc = reinterpret_cast<uintptr_t>(driver.tx_ring<DriverSplitRing>().layout().desc);
    }
    h.join();
    ASSERT_EQ(h.backend.table.nregions, 1u);
    const vhost_user::MemoryRegionDesc& r = h.backend.table.regions[0];
    EXPECT_EQ(r.guest_phys_addr, r.userspace_addr);
    EXPECT_EQ(r.mmap_offset, 0u);
    EXPECT_EQ(r.memory_size % 4096, 0u);
    EXPECT_EQ(h.backend.mem_fd_seals & (F_SEAL_SHRINK | F_SEAL_GROW), F_SEAL_SHRINK | F_SEAL_GROW);
    ASSERT_EQ(h.backend.addrs.size(), 2u);
    EXPECT_EQ(h.backend.addrs[1].index, NetDriver::kTxQueue);
    EXPECT_EQ(h.backend.addrs[1].desc_user_addr, tx_desc);
    for (const vhost_user::VringAddr& a : h.backend.addrs) {
        for (uint64_t p : {a.desc_user_addr, a.avail_user_addr, a.used_user_addr}) {
            EXPECT_GE(p, r.userspace_addr);
            EXPECT_LT(p, r.userspace_addr + r.memory_size);
        }
    }
    EXPECT_EQ(h.backend.fds_with_kick_call, 4u);
}

TEST(NetDriverHandshake, without_protocol_features_sends_no_enable_and_asks_no_acks) {
    Harness h;
    h.backend.offered = FeatureSet{Feature::version_1};
    h.start();
    { NetDriver driver(h.session(), config_wanting({Feature::version_1})); }
    h.join();
    for (const Received& r : h.backend.log) {
        EXPECT_NE(r.request, Request::get_protocol_features);
        EXPECT_NE(r.request, Request::set_vring_enable);
        EXPECT_EQ(r.flags & MessageHeader::kFlagNeedReply, 0u);
    }
}

TEST(NetDriverHandshake, keeps_split_rings_when_packed_is_offered_but_not_asked_for) {
    Harness h;
    h.backend.offered = h.backend.offered.with(Feature::ring_packed);
    h.start();
    {
        NetDriver driver(h.session(), config_wanting({Feature::version_1, Feature::ring_packed}));
        EXPECT_FALSE(driver.packed());
        EXPECT_EQ(driver.tx_ring<DriverSplitRing>().size(), 64);
    }
    h.join();
    EXPECT_FALSE(FeatureSet(h.backend.acked_features).has(Feature::ring_packed));
    ASSERT_EQ(h.backend.bases.size(), 2u);
    EXPECT_EQ(h.backend.bases[0].num, 0u);
    EXPECT_EQ(h.backend.bases[1].num, 0u);
}

// QEMU's packed bring-up: NUM any size, BASE with both wrap counters (bit 15
// avail, bit 31 used) set for a fresh ring, ADDR naming the descriptor ring
// (16-aligned) and the driver and device event areas (4-aligned) as "avail"
// and "used" (vhost-user.rst, virtio 1.2 §2.8.10.1).
TEST(NetDriverHandshake, negotiates_packed_and_describes_packed_rings_as_qemu_does) {
    Harness h;
    h.backend.offered = h.backend.offered.with(Feature::ring_packed);
    h.start();
    NetDriverConfig c = config_wanting({Feature::version_1, Feature::ring_event_idx});
    c.packed = true;
    c.queue_size = 100;  // packed rings need not be a power of two
    std::array<DriverPackedRingLayout, 2> layouts{};
    {
        NetDriver driver(h.session(), c);
        EXPECT_TRUE(driver.packed());
        EXPECT_TRUE(driver.negotiated_features().has(Feature::ring_packed));
        for (uint32_t q : {NetDriver::kRxQueue, NetDriver::kTxQueue}) {
            layouts[q] = driver.ring<DriverPackedRing>(q).layout();
            EXPECT_TRUE(driver.ring<DriverPackedRing>(q).event_idx());
        }
        EXPECT_THROW(driver.tx_ring<DriverSplitRing>(), std::bad_variant_access);
        EXPECT_TRUE(driver.stop());
    }
    h.join();
    EXPECT_TRUE(FeatureSet(h.backend.acked_features).has(Feature::ring_packed));
    ASSERT_EQ(h.backend.nums.size(), 2u);
    ASSERT_EQ(h.backend.bases.size(), 2u);
    ASSERT_EQ(h.backend.addrs.size(), 2u);
    for (uint32_t q : {NetDriver::kRxQueue, NetDriver::kTxQueue}) {
        EXPECT_EQ(h.backend.nums[q].index, q);
        EXPECT_EQ(h.backend.nums[q].num, 100u);
        EXPECT_EQ(h.backend.bases[q].index, q);
        EXPECT_EQ(h.backend.bases[q].num, 0x80008000u);
        const vhost_user::VringAddr& a = h.backend.addrs[q];
        EXPECT_EQ(a.index, q);
        EXPECT_EQ(a.desc_user_addr, reinterpret_cast<uintptr_t>(layouts[q].desc));
        EXPECT_EQ(a.avail_user_addr, reinterpret_cast<uintptr_t>(layouts[q].driver_event));
        EXPECT_EQ(a.used_user_addr, reinterpret_cast<uintptr_t>(layouts[q].device_event));
        EXPECT_EQ(a.desc_user_addr % 16, 0u);
        EXPECT_EQ(a.avail_user_addr % 4, 0u);
        EXPECT_EQ(a.used_user_addr % 4, 0u);
        // The device event area lies past the 100 descriptors, not over them.
        EXPECT_GE(a.avail_user_addr, a.desc_user_addr + 100 * sizeof(virtio::PackedDesc));
        EXPECT_GE(a.used_user_addr, a.avail_user_addr + sizeof(virtio::PackedEventSuppress));
    }
}

TEST(NetDriverHandshake, packed_fails_naming_the_feature_when_the_back_end_does_not_offer_it) {
    Harness h;  // the scripted back end offers no RING_PACKED
    h.start();
    NetDriverConfig c = config_wanting({Feature::version_1});
    c.packed = true;
    try {
        NetDriver driver(h.session(), c);
        ADD_FAILURE() << "bring-up succeeded";
    } catch (const FrontendError& e) {
        EXPECT_NE(std::string(e.what()).find("VIRTIO_F_RING_PACKED (bit 34)"), std::string::npos)
            << e.what();
    }
    h.join();
    // Nothing was acked: the driver gave up before SET_FEATURES.
    EXPECT_EQ(h.backend.acked_features, 0u);
}

TEST(NetDriverHandshake, refuses_a_split_queue_size_that_is_not_a_power_of_two) {
    Harness h;
    NetDriverConfig c = config_wanting({Feature::version_1});
    c.queue_size = 100;
    EXPECT_THROW(NetDriver(h.session(), c), FrontendError);
}

void expect_bring_up_fails(Harness& h, const std::string& fragment) {
    h.start();
    try {
        NetDriver driver(h.session(), config_wanting({Feature::version_1}));
        ADD_FAILURE() << "bring-up succeeded";
    } catch (const FrontendError& e) {
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("test-socket"), std::string::npos) << e.what();
    }
    h.join();
}

TEST(NetDriverHandshake, rejects_a_reply_whose_flags_are_not_exactly_0x5) {
    Harness h;
    h.backend.faulty_request = Request::get_features;
    h.backend.fault = Fault::reply_flags;
    expect_bring_up_fails(h, "GET_FEATURES: reply flags 13");
}

TEST(NetDriverHandshake, rejects_a_reply_of_the_wrong_size) {
    Harness h;
    h.backend.faulty_request = Request::get_protocol_features;
    h.backend.fault = Fault::reply_size;
    expect_bring_up_fails(h, "GET_PROTOCOL_FEATURES: reply size 4");
}

TEST(NetDriverHandshake, fails_when_the_back_end_nacks_a_request) {
    Harness h;
    h.backend.faulty_request = Request::set_mem_table;
    h.backend.fault = Fault::nack;
    expect_bring_up_fails(h, "SET_MEM_TABLE: back end refused");
}

TEST(NetDriverHandshake, fails_when_a_required_feature_is_not_offered) {
    Harness h;
    h.start();
    NetDriverConfig c = config_wanting({Feature::version_1});
    c.required_features = FeatureSet{Feature::net_host_tso4};
    EXPECT_THROW(NetDriver(h.session(), c), FrontendError);
    h.join();
}

}  // namespace
}  // namespace vnet::frontend
