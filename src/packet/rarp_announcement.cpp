#include "packet/rarp_announcement.hpp"

#include <algorithm>

#include "packet/byte_order.hpp"

namespace vnet::packet {
namespace {

// RFC 903 / RFC 826 field layout after the Ethernet header.
constexpr size_t kHardwareTypeOffset = 0;
constexpr size_t kProtocolTypeOffset = 2;
constexpr size_t kHardwareLenOffset = 4;
constexpr size_t kProtocolLenOffset = 5;
constexpr size_t kOpcodeOffset = 6;
constexpr size_t kSenderMacOffset = 8;   // then 4 bytes of sender IPv4
constexpr size_t kTargetMacOffset = 18;  // then 4 bytes of target IPv4
constexpr uint16_t kHardwareEthernet = 1;
constexpr uint16_t kOpRequestReverse = 3;

}  // namespace

std::array<uint8_t, kEthMinFrameLen> rarp_announcement(const MacAddress& mac) {
    std::array<uint8_t, kEthMinFrameLen> f{};
    std::fill_n(f.begin() + kEthDstOffset, mac.size(), 0xff);
    std::copy(mac.begin(), mac.end(), f.begin() + kEthSrcOffset);
    store_be16(&f[kEthTypeOffset], kEtherTypeRarp);
    uint8_t* rarp = f.data() + kEthHeaderLen;
    store_be16(rarp + kHardwareTypeOffset, kHardwareEthernet);
    store_be16(rarp + kProtocolTypeOffset, kEtherTypeIpv4);
    rarp[kHardwareLenOffset] = static_cast<uint8_t>(mac.size());
    rarp[kProtocolLenOffset] = 4;
    store_be16(rarp + kOpcodeOffset, kOpRequestReverse);
    std::copy(mac.begin(), mac.end(), rarp + kSenderMacOffset);
    std::copy(mac.begin(), mac.end(), rarp + kTargetMacOffset);
    return f;
}

}  // namespace vnet::packet
