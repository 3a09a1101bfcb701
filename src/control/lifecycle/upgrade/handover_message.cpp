#include "control/lifecycle/upgrade/handover_message.hpp"

#include <array>
#include <nlohmann/json.hpp>
#include <optional>

namespace vnet::control::upgrade {
namespace {

constexpr std::array<std::pair<HandoverType, std::string_view>, 5> kTypes{{
    {HandoverType::offer, "offer"},
    {HandoverType::end, "end"},
    {HandoverType::ready, "ready"},
    {HandoverType::failed, "failed"},
    {HandoverType::released, "released"},
}};

std::optional<HandoverType> type_named(std::string_view name) {
    for (const auto& [type, text] : kTypes) {
        if (text == name) {
            return type;
        }
    }
    return std::nullopt;
}

// SCM_MAX_FD: the kernel refuses more in one message, so no offer may
// announce more (a tap's 256 queues are refused by the sender before).
constexpr size_t kMaxFdsPerMessage = 253;

}  // namespace

std::string_view to_string(HandoverType type) {
    for (const auto& [t, text] : kTypes) {
        if (t == type) {
            return text;
        }
    }
    return "?";
}

HandoverMessage handover_offer(std::string kind, std::string name, std::string key, size_t fds) {
    HandoverMessage m;
    m.type = HandoverType::offer;
    m.kind = std::move(kind);
    m.name = std::move(name);
    m.key = std::move(key);
    m.fds = fds;
    return m;
}

HandoverMessage handover_of_type(HandoverType type) {
    HandoverMessage m;
    m.type = type;
    return m;
}

HandoverMessage handover_failed(std::string reason) {
    HandoverMessage m;
    m.type = HandoverType::failed;
    m.reason = std::move(reason);
    return m;
}

std::string encode_handover(const HandoverMessage& m) {
    nlohmann::json j{{"vnetd_handover", kHandoverVersion}, {"type", to_string(m.type)}};
    if (m.type == HandoverType::offer) {
        j["kind"] = m.kind;
        j["name"] = m.name;
        j["key"] = m.key;
        j["fds"] = m.fds;
    } else if (m.type == HandoverType::failed) {
        j["reason"] = m.reason;
    }
    return j.dump();
}

std::variant<HandoverMessage, std::string> decode_handover(std::string_view datagram,
                                                           size_t fds_received) {
    const nlohmann::json j = nlohmann::json::parse(datagram, nullptr, false);
    if (!j.is_object()) {
        return std::string("handover message: not a JSON object");
    }
    const auto version = j.find("vnetd_handover");
    if (version == j.end() || !version->is_number_integer()) {
        return std::string("handover message: no vnetd_handover version");
    }
    if (version->get<int64_t>() != kHandoverVersion) {
        return "handover message: version " + version->dump() + ", this vnetd speaks " +
               std::to_string(kHandoverVersion);
    }
    const auto type_member = j.find("type");
    const std::optional<HandoverType> type = type_member != j.end() && type_member->is_string()
                                                 ? type_named(type_member->get<std::string>())
                                                 : std::nullopt;
    if (!type) {
        return "handover message: unknown type " +
               (type_member == j.end() ? std::string("(none)") : type_member->dump());
    }
    HandoverMessage m;
    m.type = *type;
    auto text = [&j](const char* key) -> std::optional<std::string> {
        const auto it = j.find(key);
        if (it == j.end() || !it->is_string()) {
            return std::nullopt;
        }
        return it->get<std::string>();
    };
    if (m.type == HandoverType::offer) {
        const auto kind = text("kind");
        const auto name = text("name");
        const auto key = text("key");
        const auto fds = j.find("fds");
        if (!kind || kind->empty() || !name || !key || fds == j.end() ||
            !fds->is_number_unsigned()) {
            return std::string("handover offer: needs kind, name, key (strings) and fds (a count)");
        }
        m.kind = *kind;
        m.name = *name;
        m.key = *key;
        m.fds = fds->get<size_t>();
        if (m.fds == 0 || m.fds > kMaxFdsPerMessage) {
            return "handover offer for " + m.kind + " '" + m.name + "': " + fds->dump() +
                   " fds announced, not 1.." + std::to_string(kMaxFdsPerMessage);
        }
    } else if (m.type == HandoverType::failed) {
        m.reason = text("reason").value_or("");
    }
    if (m.fds != fds_received) {
        return "handover " + std::string(to_string(m.type)) +
               (m.name.empty() ? std::string() : " for " + m.kind + " '" + m.name + "'") + ": " +
               std::to_string(m.fds) + " fds announced, " + std::to_string(fds_received) +
               " received";
    }
    return m;
}

}  // namespace vnet::control::upgrade
