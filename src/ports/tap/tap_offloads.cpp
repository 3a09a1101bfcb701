#include "ports/tap/tap_offloads.hpp"

#include <cstdio>

namespace vnet::ports {

using virtio::Feature;

TunOffloads tun_offloads_for_guest(virtio::FeatureSet negotiated) {
    TunOffloads out;
    if (!negotiated.has(Feature::net_guest_csum)) {
        return out;
    }
    out = out.with(TunOffload::csum);
    const bool tso4 = negotiated.has(Feature::net_guest_tso4);
    const bool tso6 = negotiated.has(Feature::net_guest_tso6);
    if (tso4) {
        out = out.with(TunOffload::tso4);
    }
    if (tso6) {
        out = out.with(TunOffload::tso6);
    }
    if ((tso4 || tso6) && negotiated.has(Feature::net_guest_ecn)) {
        out = out.with(TunOffload::tso_ecn);
    }
    if (negotiated.has(Feature::net_guest_ufo)) {
        out = out.with(TunOffload::ufo);
    }
    if (negotiated.has(Feature::net_guest_uso4) && negotiated.has(Feature::net_guest_uso6)) {
        out = out.with(TunOffload::uso4).with(TunOffload::uso6);
    }
    return out;
}

std::array<TunOffloads, 3> tun_offload_fallbacks(TunOffloads wanted) {
    const TunOffloads no_uso = wanted.without(TunOffload::uso4).without(TunOffload::uso6);
    const TunOffloads no_ufo = no_uso.without(TunOffload::ufo);
    return {wanted, no_uso, no_ufo};
}

std::string to_string(TunOffloads offloads) {
    struct Name {
        TunOffload bit;
        const char* text;
    };
    static constexpr Name kNames[] = {
        {TunOffload::csum, "csum"},       {TunOffload::tso4, "tso4"}, {TunOffload::tso6, "tso6"},
        {TunOffload::tso_ecn, "tso_ecn"}, {TunOffload::ufo, "ufo"},   {TunOffload::uso4, "uso4"},
        {TunOffload::uso6, "uso6"},
    };
    std::string out;
    unsigned named = 0;
    for (const Name& n : kNames) {
        if (offloads.has(n.bit)) {
            out += out.empty() ? "" : "|";
            out += n.text;
        }
        named |= TunOffloads::mask(n.bit);
    }
    if (const unsigned unknown = offloads.bits() & ~named; unknown != 0) {
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%x", unknown);
        out += out.empty() ? "" : "|";
        out += hex;
    }
    return out.empty() ? "none" : out;
}

}  // namespace vnet::ports
