#include "experiments/vm_switch_systems.hpp"

#include <fstream>
#include <regex>
#include <sstream>

#include "harness/ovs_dpdk.hpp"
#include "harness/process.hpp"
#include "harness/rate_meter.hpp"
#include "harness/testpmd_instance.hpp"
#include "harness/vnetd_instance.hpp"

namespace vnet::bench {
namespace {

std::string port_name(int i) {
    return "vm" + std::to_string(i);
}

class VnetdSwitchSystem : public SwitchSystem {
public:
    VnetdSwitchSystem(BenchContext& ctx, const std::string& label, const SwitchSystemSpec& spec)
        : ctx_(ctx), learns_(spec.kind == SwitchKind::vnetd_switch) {
        const std::string config = ctx.log_path(label + ".toml");
        control_ = ctx.fresh_socket_path(label + "-ctl");
        std::ofstream out(config);
        out << "[daemon]\ncontrol_socket = \"" << control_ << "\"\n";
        if (spec.kind == SwitchKind::vnetd_switch) {
            out << "[[switch]]\nname = \"s0\"\n";
            if (spec.mac_table_size != 0) {
                out << "mac_table_size = " << spec.mac_table_size << "\n";
            }
        }
        for (int i = 0; i < spec.ports; ++i) {
            sockets_.push_back(ctx.fresh_socket_path(label + "-" + port_name(i)));
            out << "[[port]]\nname = \"" << port_name(i)
                << "\"\ntype = \"vhost-user\"\nsocket_path = \"" << sockets_.back() << "\"\n";
            if (spec.kind == SwitchKind::vnetd_switch) {
                out << "switch = \"s0\"\n";
            }
        }
        if (spec.kind == SwitchKind::vnetd_cross_connect) {
            out << "[[connect]]\nports = [\"vm0\", \"vm1\"]\n";
        }
        out.close();
        std::vector<std::string> args{"--config", config, "--mode", spec.vnetd_mode};
        if (spec.metrics) {
            args.insert(args.end(), {"--metrics-address", "127.0.0.1:0"});
        }
        // info: the metrics line names the port vnetd got.
        vnetd_ =
            std::make_unique<VnetdInstance>(ctx, label, args, "", spec.metrics ? "info" : "warn");
        for (const std::string& s : sockets_) {
            vnetd_->wait_for_socket(s);
        }
        if (spec.metrics) {
            metrics_url_ =
                first_match_in(vnetd_->log_path(), "http://127\\.0\\.0\\.1:[0-9]+/metrics");
            if (metrics_url_.empty()) {
                throw MeasureError("vnetd logged no metrics address");
            }
        }
    }

    std::optional<double> worker_busy_seconds() override {
        if (metrics_url_.empty()) {
            return std::nullopt;
        }
        ProcessSpec curl;
        curl.name = "curl";
        curl.argv = {"curl", "-sf", metrics_url_};
        const std::string text = run_checked(curl, 10);
        static const std::regex busy(R"(^vnetd_worker_busy_seconds_total\{[^}]*\} ([0-9.eE+-]+))");
        double sum = 0;
        std::istringstream lines(text);
        std::string line;
        std::smatch m;
        while (std::getline(lines, line)) {
            if (std::regex_search(line, m, busy)) {
                sum += std::stod(m[1].str());
            }
        }
        return sum;
    }

    std::string socket_path(int i) const override { return sockets_.at(i); }
    std::string failure() override { return vnetd_->failure(); }

    std::string add_port(const std::string& name) override {
        const std::string path = ctx_.log_dir() + "/" + name + ".sock";
        vnetctl({"port", "add", "vhost-user", name, "--socket-path", path, "--switch", "s0"});
        return path;
    }
    void del_port(const std::string& name) override { vnetctl({"port", "del", name}); }
    bool learns() const override { return learns_; }
    pid_t pid() const override { return vnetd_->pid(); }

    // Runs vnetctl on this vnetd; its output, or MeasureError with it.
    std::string vnetctl(const std::vector<std::string>& args) {
        ProcessSpec ctl;
        ctl.name = "vnetctl";
        ctl.argv = {ctx_.build_dir() + "/apps/vnetctl", "--socket", control_};
        ctl.argv.insert(ctl.argv.end(), args.begin(), args.end());
        const CommandResult r = run_command(ctl, 10);
        if (!r.ok()) {
            throw MeasureError("vnetctl " + args[0] + " " + args[1] + ": " + r.output);
        }
        return r.output;
    }

    nlohmann::json finish() override {
        nlohmann::json out;
        try {
            const nlohmann::json switches =
                nlohmann::json::parse(vnetctl({"--json", "switch", "list"}), nullptr, false);
            if (!switches.is_discarded() && switches.is_array() && !switches.empty()) {
                out["switch"] = switches[0].value("counters", nlohmann::json::object());
                out["mac_entries"] = switches[0].value("mac_entries", 0);
            }
        } catch (const MeasureError&) {
            // vnetd already gone: its stats file below still says what it counted.
        }
        out["vnetd"] = vnetd_counters_summary(vnetd_->stop());
        return out;
    }

private:
    BenchContext& ctx_;
    bool learns_;
    std::string control_;
    std::string metrics_url_;
    std::vector<std::string> sockets_;
    std::unique_ptr<VnetdInstance> vnetd_;
};

class OvsSystem : public SwitchSystem {
public:
    OvsSystem(BenchContext& ctx, const std::string& label, const SwitchSystemSpec& spec)
        : ovs_(ctx, OvsDpdkSpec{label, spec.userspace_tso}),
          // A guest that listens cannot announce itself before its
          // receiver does: with two ports, flooding reaches the same one.
          learns_(spec.kind == SwitchKind::ovs_normal && !spec.ovs_client_ports),
          guests_listen_(spec.ovs_client_ports) {
        for (int i = 0; i < spec.ports; ++i) {
            // OpenFlow ports count from 1.
            if (spec.ovs_client_ports) {
                sockets_.push_back(ctx.fresh_socket_path(label + "-" + port_name(i)));
                ovs_.add_vhost_client_port(port_name(i), i + 1, sockets_.back());
            } else {
                sockets_.push_back(ovs_.add_vhost_port(port_name(i), i + 1));
            }
        }
        if (spec.kind == SwitchKind::ovs_cross_connect) {
            ovs_.use_cross_connect(1, 2);
        } else {
            ovs_.use_normal_action();
        }
    }

    std::string socket_path(int i) const override { return sockets_.at(i); }
    std::string failure() override { return ovs_.failure(); }
    bool learns() const override { return learns_; }
    bool guests_listen() const override { return guests_listen_; }
    pid_t pid() const override { return ovs_.vswitchd_pid(); }
    std::string add_port(const std::string& name) override {
        return ovs_.add_vhost_port(name, ++last_ofport_);
    }
    void del_port(const std::string& name) override { ovs_.del_port(name); }

    nlohmann::json finish() override {
        nlohmann::json out;
        for (size_t i = 0; i < sockets_.size(); ++i) {
            try {
                out[port_name(static_cast<int>(i))] =
                    ovs_.interface_statistics(port_name(static_cast<int>(i)));
            } catch (const MeasureError&) {
            }
        }
        out["log"] = ovs_.log_path();
        ovs_.stop();
        return out;
    }

private:
    OvsDpdk ovs_;
    bool learns_;
    bool guests_listen_;
    int last_ofport_ = 100;  // run-time ports: OpenFlow numbers above the fixed ones
    std::vector<std::string> sockets_;
};

class TestpmdIoSystem : public SwitchSystem {
public:
    TestpmdIoSystem(BenchContext& ctx, const std::string& label, const SwitchSystemSpec& spec) {
        for (int i = 0; i < spec.ports; ++i) {
            sockets_.push_back(ctx.fresh_socket_path(label + "-" + port_name(i)));
        }
        pmd_ = std::make_unique<TestpmdInstance>(ctx, testpmd_vhost_io(ctx, label, sockets_));
        pmd_->wait_for_log("Port statistics", 30);
    }

    std::string socket_path(int i) const override { return sockets_.at(i); }
    std::string failure() override { return pmd_->failure(); }
    bool learns() const override { return false; }
    pid_t pid() const override { return pmd_->pid(); }
    std::string add_port(const std::string&) override {
        throw MeasureError("testpmd's ports are fixed at start");
    }
    void del_port(const std::string&) override {}

    nlohmann::json finish() override {
        pmd_->stop();
        return nlohmann::json{{"testpmd_log", pmd_->log_path()}};
    }

private:
    std::vector<std::string> sockets_;
    std::unique_ptr<TestpmdInstance> pmd_;
};

}  // namespace

std::unique_ptr<SwitchSystem> start_switch_system(BenchContext& ctx, const std::string& label,
                                                  const SwitchSystemSpec& spec) {
    switch (spec.kind) {
        case SwitchKind::vnetd_switch:
        case SwitchKind::vnetd_cross_connect:
            return std::make_unique<VnetdSwitchSystem>(ctx, label, spec);
        case SwitchKind::ovs_normal:
        case SwitchKind::ovs_cross_connect:
            return std::make_unique<OvsSystem>(ctx, label, spec);
        case SwitchKind::testpmd_io:
            return std::make_unique<TestpmdIoSystem>(ctx, label, spec);
    }
    throw MeasureError("unknown switch kind");
}

std::string guest_mac(int port) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "02:00:00:00:01:%02x", port & 0xff);
    return buf;
}

}  // namespace vnet::bench
