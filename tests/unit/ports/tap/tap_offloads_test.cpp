// The guest-features -> TUNSETOFFLOAD mapping: QEMU's rule
// (virtio_net_apply_guest_offloads -> tap_fd_set_offload), restricted to the
// combinations tun.c's set_offload accepts.
#include "ports/tap/tap_offloads.hpp"

#include <gtest/gtest.h>

namespace vnet::ports {
namespace {

using virtio::Feature;
using virtio::FeatureSet;
using O = TunOffload;

TunOffloads offloads(std::initializer_list<TunOffload> bits) {
    TunOffloads out;
    for (TunOffload b : bits) {
        out = out.with(b);
    }
    return out;
}

FeatureSet all_guest_offloads() {
    return {Feature::net_guest_csum, Feature::net_guest_tso4, Feature::net_guest_tso6,
            Feature::net_guest_ecn,  Feature::net_guest_ufo,  Feature::net_guest_uso4,
            Feature::net_guest_uso6};
}

TEST(TunOffloadBits, match_the_kernel_uapi_values) {
    EXPECT_EQ(TunOffloads::mask(O::csum), 0x01u);
    EXPECT_EQ(TunOffloads::mask(O::tso4), 0x02u);
    EXPECT_EQ(TunOffloads::mask(O::tso6), 0x04u);
    EXPECT_EQ(TunOffloads::mask(O::tso_ecn), 0x08u);
    EXPECT_EQ(TunOffloads::mask(O::ufo), 0x10u);
    EXPECT_EQ(TunOffloads::mask(O::uso4), 0x20u);
    EXPECT_EQ(TunOffloads::mask(O::uso6), 0x40u);
}

TEST(TunOffloadsForGuest, no_guest_features_means_no_offloads) {
    EXPECT_TRUE(tun_offloads_for_guest(FeatureSet{}).empty());
}

TEST(TunOffloadsForGuest, guest_csum_alone_gives_csum) {
    EXPECT_EQ(tun_offloads_for_guest({Feature::net_guest_csum}), offloads({O::csum}));
}

TEST(TunOffloadsForGuest, every_segmentation_offload_is_dropped_without_guest_csum) {
    FeatureSet without_csum = all_guest_offloads().without(Feature::net_guest_csum);
    EXPECT_TRUE(tun_offloads_for_guest(without_csum).empty());
    for (Feature f : {Feature::net_guest_tso4, Feature::net_guest_tso6, Feature::net_guest_ecn,
                      Feature::net_guest_ufo, Feature::net_guest_uso4, Feature::net_guest_uso6}) {
        EXPECT_TRUE(tun_offloads_for_guest({f}).empty()) << static_cast<int>(f);
    }
}

TEST(TunOffloadsForGuest, guest_tso4_and_tso6_map_one_to_one_with_csum) {
    EXPECT_EQ(tun_offloads_for_guest({Feature::net_guest_csum, Feature::net_guest_tso4}),
              offloads({O::csum, O::tso4}));
    EXPECT_EQ(tun_offloads_for_guest({Feature::net_guest_csum, Feature::net_guest_tso6}),
              offloads({O::csum, O::tso6}));
    EXPECT_EQ(tun_offloads_for_guest(
                  {Feature::net_guest_csum, Feature::net_guest_tso4, Feature::net_guest_tso6}),
              offloads({O::csum, O::tso4, O::tso6}));
}

TEST(TunOffloadsForGuest, guest_ecn_gives_tso_ecn_only_alongside_a_tso_bit) {
    // tun consumes TUN_F_TSO_ECN only inside its TSO branch: alone it is EINVAL.
    EXPECT_EQ(tun_offloads_for_guest({Feature::net_guest_csum, Feature::net_guest_ecn}),
              offloads({O::csum}));
    EXPECT_EQ(tun_offloads_for_guest(
                  {Feature::net_guest_csum, Feature::net_guest_tso4, Feature::net_guest_ecn}),
              offloads({O::csum, O::tso4, O::tso_ecn}));
    EXPECT_EQ(tun_offloads_for_guest(
                  {Feature::net_guest_csum, Feature::net_guest_tso6, Feature::net_guest_ecn}),
              offloads({O::csum, O::tso6, O::tso_ecn}));
}

TEST(TunOffloadsForGuest, guest_ufo_gives_ufo_with_csum) {
    EXPECT_EQ(tun_offloads_for_guest({Feature::net_guest_csum, Feature::net_guest_ufo}),
              offloads({O::csum, O::ufo}));
}

TEST(TunOffloadsForGuest, uso_needs_both_guest_uso4_and_guest_uso6) {
    EXPECT_EQ(tun_offloads_for_guest({Feature::net_guest_csum, Feature::net_guest_uso4}),
              offloads({O::csum}));
    EXPECT_EQ(tun_offloads_for_guest({Feature::net_guest_csum, Feature::net_guest_uso6}),
              offloads({O::csum}));
    EXPECT_EQ(tun_offloads_for_guest(
                  {Feature::net_guest_csum, Feature::net_guest_uso4, Feature::net_guest_uso6}),
              offloads({O::csum, O::uso4, O::uso6}));
}

TEST(TunOffloadsForGuest, all_guest_offloads_give_every_bit) {
    EXPECT_EQ(tun_offloads_for_guest(all_guest_offloads()),
              offloads({O::csum, O::tso4, O::tso6, O::tso_ecn, O::ufo, O::uso4, O::uso6}));
}

TEST(TunOffloadsForGuest, host_side_and_unrelated_features_are_ignored) {
    FeatureSet host_side{Feature::net_csum,       Feature::net_host_tso4,
                         Feature::net_host_tso6,  Feature::net_host_ecn,
                         Feature::net_host_ufo,   Feature::net_host_uso,
                         Feature::net_mrg_rxbuf,  Feature::version_1,
                         Feature::ring_event_idx, Feature::net_ctrl_guest_offloads};
    EXPECT_TRUE(tun_offloads_for_guest(host_side).empty());
    EXPECT_EQ(tun_offloads_for_guest(host_side.with(Feature::net_guest_csum)), offloads({O::csum}));
}

TEST(TunOffloadsForGuest, never_sets_a_bit_outside_the_known_seven) {
    // Every subset of the seven GUEST_* offload features.
    const Feature guest[] = {Feature::net_guest_csum, Feature::net_guest_tso4,
                             Feature::net_guest_tso6, Feature::net_guest_ecn,
                             Feature::net_guest_ufo,  Feature::net_guest_uso4,
                             Feature::net_guest_uso6};
    for (unsigned subset = 0; subset < (1u << 7); ++subset) {
        FeatureSet features;
        for (unsigned b = 0; b < 7; ++b) {
            if ((subset & (1u << b)) != 0) {
                features = features.with(guest[b]);
            }
        }
        const TunOffloads out = tun_offloads_for_guest(features);
        EXPECT_EQ(out.bits() & ~0x7fu, 0u);
        // tun's acceptance rules: anything => csum; ecn => a tso bit; uso4 <=> uso6.
        if (!out.empty()) {
            EXPECT_TRUE(out.has(O::csum)) << subset;
        }
        if (out.has(O::tso_ecn)) {
            EXPECT_TRUE(out.has(O::tso4) || out.has(O::tso6)) << subset;
        }
        EXPECT_EQ(out.has(O::uso4), out.has(O::uso6)) << subset;
    }
}

TEST(TunOffloadFallbacks, drop_uso_first_then_ufo_like_qemu) {
    const TunOffloads all = offloads({O::csum, O::tso4, O::tso6, O::ufo, O::uso4, O::uso6});
    const auto steps = tun_offload_fallbacks(all);
    EXPECT_EQ(steps[0], all);
    EXPECT_EQ(steps[1], offloads({O::csum, O::tso4, O::tso6, O::ufo}));
    EXPECT_EQ(steps[2], offloads({O::csum, O::tso4, O::tso6}));
}

TEST(TunOffloadFallbacks, repeat_the_request_when_it_has_nothing_to_drop) {
    const TunOffloads plain = offloads({O::csum, O::tso4});
    for (TunOffloads step : tun_offload_fallbacks(plain)) {
        EXPECT_EQ(step, plain);
    }
}

TEST(TunOffloadsToString, names_bits_in_kernel_order_and_says_none_when_empty) {
    EXPECT_EQ(to_string(TunOffloads{}), "none");
    EXPECT_EQ(to_string(offloads({O::tso6, O::csum})), "csum|tso6");
    EXPECT_EQ(to_string(TunOffloads{0x7f}), "csum|tso4|tso6|tso_ecn|ufo|uso4|uso6");
    EXPECT_EQ(to_string(TunOffloads{0x181}), "csum|0x180");
}

}  // namespace
}  // namespace vnet::ports
