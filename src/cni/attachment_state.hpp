// What vnetd-cni remembers of one attachment (container id + ifname): one
// small JSON file under the state dir, written by rename so a crash leaves
// the old file or the new one, never half of one. It outlives vnetd and the
// node's reboot (/var/lib), so DEL and GC find what ADD made.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace vnet::cni {

struct Attachment {
    std::string container_id;
    std::string ifname;
    std::string network;  // the config's name: GC looks at its own network only
    std::string iftype;   // "vhostuser" / "tap"
    std::string port;     // the vnetd port (and, for a tap, its name on the host)
    std::string netns;
    std::string socket_path;       // vhostuser
    std::string device_info_file;  // written at ADD, removed at DEL
    nlohmann::json ipam;           // the ipam section ADD used: GC releases with it
    nlohmann::json result;         // ADD's result, normalized
};

nlohmann::json to_json(const Attachment& a);
Attachment attachment_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception

// The vnetd port (and host tap) name of an attachment: "vn" and 12 hex
// digits of a hash of container id and ifname, unique per attachment and
// within IFNAMSIZ.
std::string port_name_for(const std::string& container_id, const std::string& ifname);

class StateStore {
public:
    explicit StateStore(std::string dir) : dir_(std::move(dir)) {}

    // Throws CniError 5 (io) when the directory or the file cannot be written.
    void save(const Attachment& a) const;
    std::optional<Attachment> load(const std::string& container_id,
                                   const std::string& ifname) const;
    // Missing is fine (DEL runs again).
    void remove(const std::string& container_id, const std::string& ifname) const;
    // Every attachment on record; unreadable files are skipped.
    std::vector<Attachment> list() const;

    std::string file_for(const std::string& container_id, const std::string& ifname) const;

private:
    std::string dir_;
};

}  // namespace vnet::cni
