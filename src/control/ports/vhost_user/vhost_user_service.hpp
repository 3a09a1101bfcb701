// What the control thread runs for a VM port: its vhost-user socket
// (listening, or connecting to a front end that listens), the devices it
// accepts, and the coupling between the guest and the port's peer: the
// guest's negotiated features and its running queue pairs are passed on
// through the peer's follow_peer_* hooks, whatever kind the peer is.
#pragma once

#include <memory>
#include <vector>

#include "control/ports/port_factory.hpp"
#include "ports/vhost_user/vhost_user_port.hpp"
#include "vhost_user/client_socket.hpp"
#include "vhost_user/server_socket.hpp"

namespace vnet::control {

class VhostUserService final : public PortService {
public:
    VhostUserService(ports::VhostUserPort& port, const PortConfig& config,
                     const PortContext& context);
    ~VhostUserService() override;

    void start(ports::Port* peer) override;
    void set_peer(ports::Port* peer) override;
    size_t connections() override;
    void show(nlohmann::json& out) override;  // vhost_user_show.cpp
    // A listening port hands over its socket; a client port nothing (the
    // successor connects once we let go).
    std::vector<int> handover_fds() override;
    void hand_over() override;

private:
    std::vector<vhost_user::VhostUserDevice*> devices();
    void follow_guest(ports::Port& peer);
    void open_socket(const vhost_user::DeviceConfig& device);

    ports::VhostUserPort& port_;
    const PortConfig config_;  // a copy: ports come and go at run time
    UniqueFd handed_over_;     // the listening socket our predecessor handed over
    Logger log_;
    io::Reactor& reactor_;
    ControlQueue& control_queue_;
    std::unique_ptr<vhost_user::ServerSocket> server_;
    std::unique_ptr<vhost_user::ClientSocket> client_;
};

}  // namespace vnet::control
