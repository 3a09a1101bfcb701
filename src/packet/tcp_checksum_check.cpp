#include "packet/tcp_checksum_check.hpp"

#include "packet/byte_order.hpp"
#include "packet/internet_checksum.hpp"
#include "packet/wire.hpp"

namespace vnet::packet {

bool tcp_checksum_verifies(const uint8_t* frame, uint32_t len) {
    if (len < kEthHeaderLen + kIpv4HeaderLen + kTcpMinHeaderLen) {
        return false;
    }
    const uint8_t* ip = frame + kEthHeaderLen;
    const uint32_t room = len - static_cast<uint32_t>(kEthHeaderLen);
    const uint16_t ethertype = load_be16(frame + kEthTypeOffset);
    bool ipv4 = false;
    uint32_t l3_len = 0;
    uint32_t l4_len = 0;
    if (ethertype == kEtherTypeIpv4) {
        const uint16_t total = load_be16(ip + kIpv4TotalLenOffset);
        if (ip[0] != kIpv4VersionIhl5 || ip[kIpv4ProtoOffset] != kIpProtoTcp || total > room ||
            total < kIpv4HeaderLen + kTcpMinHeaderLen ||
            (load_be16(ip + kIpv4FragOffset) & (kIpv4MoreFragments | kIpv4FragmentOffsetMask)) !=
                0) {
            return false;
        }
        ipv4 = true;
        l3_len = kIpv4HeaderLen;
        l4_len = total - kIpv4HeaderLen;
    } else if (ethertype == kEtherTypeIpv6) {
        if (room < kIpv6HeaderLen + kTcpMinHeaderLen || (ip[0] >> 4) != 6 ||
            ip[kIpv6NextHeaderOffset] != kIpProtoTcp) {
            return false;
        }
        l3_len = kIpv6HeaderLen;
        l4_len = load_be16(ip + kIpv6PayloadLenOffset);
        if (l4_len < kTcpMinHeaderLen || l4_len > room - kIpv6HeaderLen) {
            return false;
        }
    } else {
        return false;
    }
    const uint16_t sum =
        checksum_add(pseudo_header_sum(ip, ipv4, kIpProtoTcp, l4_len), ip + l3_len, l4_len);
    return sum == 0xffff;
}

}  // namespace vnet::packet
