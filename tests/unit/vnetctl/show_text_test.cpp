// vnetctl show's text dump of port.show's JSON: the sections a reader looks
// for, in order, with the values from the JSON.
#include <gtest/gtest.h>

#include <sstream>

#include "show_text.hpp"

namespace vnet::vnetctl {
namespace {

using nlohmann::json;

json counters(uint64_t packets, uint64_t kicks, uint64_t calls, uint64_t no_destination) {
    return {{"packets", packets},
            {"bytes", packets * 60},
            {"bursts", packets == 0 ? 0 : 1},
            {"kicks", kicks},
            {"calls", calls},
            {"drops", {{"no_destination", no_destination}, {"policed", 0}}}};
}

json a_connected_vm_port() {
    return json::array({json{
        {"name", "vm0"},
        {"type", "vhost-user"},
        {"queue_pairs", 1},
        {"switch", "s0"},
        {"socket", {{"path", "/run/vnetd/vm0.sock"}, {"client", false}}},
        {"state", "connected"},
        {"device_status", 15},
        {"ring_format", "split"},
        {"features",
         {{"bits", 0x100008000ull},
          {"hex", "0x100008000"},
          {"names", {"VIRTIO_NET_F_MRG_RXBUF", "VIRTIO_F_VERSION_1"}}}},
        {"protocol_features",
         {{"bits", 8}, {"hex", "0x8"}, {"names", {"VHOST_USER_PROTOCOL_F_REPLY_ACK"}}}},
        {"memory",
         {{{"guest_phys_addr", 0},
           {"size", 4194304},
           {"user_addr", 0x7f0000000000ull},
           {"mmap_offset", 0}}}},
        {"rings",
         {{{"index", 1},
           {"queue_pair", 0},
           {"virtqueue", "tx"},
           {"direction", "from_guest"},
           {"format", "split"},
           {"size", 256},
           {"started", true},
           {"enabled", true},
           {"ready", true},
           {"running", true},
           {"desc_user_addr", 4096},
           {"avail_user_addr", 8192},
           {"used_user_addr", 12288},
           {"last_avail_idx", 1000},
           {"last_used_idx", 1000},
           {"guest",
            {{"avail_idx", 1000}, {"avail_flags", 0}, {"used_idx", 1000}, {"used_flags", 1}}},
           {"kicks", 17},
           {"calls", 2},
           {"packets", 1000},
           {"drops", 0},
           {"kick_fd", true},
           {"call_fd", true}}}},
        {"stats",
         {{"name", "vm0"},
          {"kind", "vhost-user"},
          {"queues",
           {{{"queue", 0}, {"rx", counters(1000, 17, 2, 3)}, {"tx", counters(0, 0, 0, 0)}}}}}}}});
}

std::string dump(const json& ports) {
    std::ostringstream out;
    print_show(ports, out);
    return out.str();
}

TEST(ShowText, a_connected_vm_port_has_every_section_in_order) {
    const std::string text = dump(a_connected_vm_port());
    const std::vector<std::string> in_order = {
        "Port vm0 (vhost-user, 1 queue pair, switch s0)\n",
        "  switch s0, allowed MACs any\n",
        "  socket /run/vnetd/vm0.sock (server), connected\n",
        "  features 0x100008000\n    VIRTIO_NET_F_MRG_RXBUF\n    VIRTIO_F_VERSION_1\n",
        "  protocol features 0x8\n    VHOST_USER_PROTOCOL_F_REPLY_ACK\n",
        "  memory regions: 1\n",
        "0x400000",
        "0x7f0000000000",
        "  ring 1 (tx, from the guest, queue pair 0): split, size 256, started yes, enabled yes, "
        "running yes\n",
        "    last_avail_idx 1000  last_used_idx 1000\n",
        "    avail_flags 0  avail_idx 1000  used_flags 1  used_idx 1000\n",
        "    kicks 17  calls 2  packets 1000  drops 0  kick_fd yes  call_fd yes\n",
        "  counters (rx: out of the port, tx: into it):\n",
        "  drops by reason:\n    q0 rx no_destination 3\n",
    };
    size_t at = 0;
    for (const std::string& part : in_order) {
        const size_t found = text.find(part, at);
        ASSERT_NE(found, std::string::npos) << "missing or out of order: " << part << "\nin:\n"
                                            << text;
        at = found + part.size();
    }
}

TEST(ShowText, a_ring_that_resumed_inflight_chains_says_how_many) {
    json port = a_connected_vm_port();
    port[0]["rings"][0]["inflight_resumed"] = 5;
    EXPECT_NE(dump(port).find("call_fd yes  inflight resumed 5\n"), std::string::npos)
        << dump(port);
}

TEST(ShowText, a_ring_shows_the_fields_its_model_named_and_how_to_read_its_cursors) {
    json port = a_connected_vm_port();
    json& ring = port[0]["rings"][0];
    ring["format"] = "packed";
    ring["last_avail_idx"] = 32771;
    ring["last_used_idx"] = 32771;
    ring["cursor_encoding"] = "wrap counter in bit 15";
    ring["guest"] = {{"driver_event_flags", 0},
                     {"driver_event_off_wrap", 0},
                     {"device_event_flags", 1},
                     {"device_event_off_wrap", 0},
                     {"next_available", false}};
    const std::string text = dump(port);
    EXPECT_NE(text.find("    last_avail_idx 32771  last_used_idx 32771  (wrap counter in bit 15)\n"
                        "    device_event_flags 1  device_event_off_wrap 0  driver_event_flags 0  "
                        "driver_event_off_wrap 0  next_available no\n"),
              std::string::npos)
        << text;
}

TEST(ShowText, a_port_without_a_front_end_shows_its_state_and_counters_only) {
    json ports = a_connected_vm_port();
    json& p = ports[0];
    for (const char* key : {"features", "protocol_features", "memory", "rings", "device_status"}) {
        p.erase(key);
    }
    p["state"] = "listening";
    p["stats"]["queues"][0]["rx"] = counters(0, 0, 0, 0);
    const std::string text = dump(ports);
    EXPECT_NE(text.find("  socket /run/vnetd/vm0.sock (server), listening\n"), std::string::npos)
        << text;
    EXPECT_EQ(text.find("features"), std::string::npos) << text;
    EXPECT_EQ(text.find("ring "), std::string::npos) << text;
    EXPECT_NE(text.find("  drops by reason: none\n"), std::string::npos) << text;
}

TEST(ShowText, a_tap_port_shows_its_tap_facts) {
    const json ports = json::array(
        {{{"name", "t0"},
          {"type", "tap"},
          {"queue_pairs", 2},
          {"stats",
           {{"tap", {{"fds", "7,8"}, {"ifname", "vt0"}}},
            {"queues",
             {{{"queue", 0}, {"rx", counters(5, 0, 0, 0)}, {"tx", counters(0, 0, 0, 0)}}}}}}}});
    const std::string text = dump(ports);
    EXPECT_NE(text.find("Port t0 (tap, 2 queue pairs)\n  tap fds 7,8 ifname vt0\n"),
              std::string::npos)
        << text;
}

}  // namespace
}  // namespace vnet::vnetctl
