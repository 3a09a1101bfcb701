#include "cni/attachment_state.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cni/cni_error.hpp"

namespace vnet::cni {

using nlohmann::json;

namespace {

[[noreturn]] void io_error(const std::string& what, int err) {
    throw CniError(ErrorCode::io_failure, what + ": " + std::strerror(err));
}

// FNV-1a, 64 bits: stable across builds and hosts (std::hash is neither).
uint64_t fnv1a(const std::string& s) {
    uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : s) {
        h = (h ^ c) * 1099511628211ULL;
    }
    return h;
}

}  // namespace

json to_json(const Attachment& a) {
    return {{"containerID", a.container_id},
            {"ifname", a.ifname},
            {"network", a.network},
            {"iftype", a.iftype},
            {"port", a.port},
            {"netns", a.netns},
            {"socketPath", a.socket_path},
            {"deviceInfoFile", a.device_info_file},
            {"ipam", a.ipam},
            {"result", a.result}};
}

Attachment attachment_from_json(const json& j) {
    Attachment a;
    a.container_id = j.at("containerID").get<std::string>();
    a.ifname = j.at("ifname").get<std::string>();
    a.network = j.value("network", std::string());
    a.iftype = j.at("iftype").get<std::string>();
    a.port = j.at("port").get<std::string>();
    a.netns = j.value("netns", std::string());
    a.socket_path = j.value("socketPath", std::string());
    a.device_info_file = j.value("deviceInfoFile", std::string());
    a.ipam = j.value("ipam", json());
    a.result = j.value("result", json());
    return a;
}

std::string port_name_for(const std::string& container_id, const std::string& ifname) {
    char buf[16];
    std::snprintf(
        buf, sizeof buf, "%012llx",
        static_cast<unsigned long long>(fnv1a(container_id + "/" + ifname) & 0xffffffffffffULL));
    return std::string("vn") + buf;
}

std::string StateStore::file_for(const std::string& container_id, const std::string& ifname) const {
    // Both parts are checked names (no '/'); '+' appears in neither.
    return dir_ + "/" + container_id + "+" + ifname + ".json";
}

void StateStore::save(const Attachment& a) const {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) {
        io_error("creating state directory " + dir_, ec.value());
    }
    const std::string path = file_for(a.container_id, a.ifname);
    const std::string tmp = path + ".tmp";
    const std::string text = to_json(a).dump(2) + "\n";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        io_error("writing " + tmp, errno);
    }
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    const int write_errno = errno;
    // fsync before rename: after a power loss the new name holds the whole file.
    const bool synced = written && ::fsync(fd) == 0;
    ::close(fd);
    if (!written || !synced || ::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = written ? errno : write_errno;
        ::unlink(tmp.c_str());
        io_error("writing " + path, err);
    }
}

std::optional<Attachment> StateStore::load(const std::string& container_id,
                                           const std::string& ifname) const {
    std::ifstream in(file_for(container_id, ifname));
    if (!in) {
        return std::nullopt;
    }
    std::stringstream text;
    text << in.rdbuf();
    const json j = json::parse(text.str(), nullptr, false);
    try {
        return attachment_from_json(j);
    } catch (const json::exception&) {
        return std::nullopt;
    }
}

void StateStore::remove(const std::string& container_id, const std::string& ifname) const {
    const std::string path = file_for(container_id, ifname);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
        io_error("removing " + path, errno);
    }
}

std::vector<Attachment> StateStore::list() const {
    std::vector<Attachment> out;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
        const std::string name = entry.path().filename().string();
        const size_t plus = name.find('+');
        if (entry.path().extension() != ".json" || plus == std::string::npos) {
            continue;
        }
        const std::string stem = entry.path().stem().string();
        if (auto a = load(stem.substr(0, plus), stem.substr(plus + 1))) {
            out.push_back(std::move(*a));
        }
    }
    return out;
}

}  // namespace vnet::cni
