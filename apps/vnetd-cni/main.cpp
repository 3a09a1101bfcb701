// vnetd-cni: a CNI plugin (containernetworking SPEC 1.1) that attaches pods
// to a vnetd switch through vnetd's control socket. The runtime gives the
// verb and the attachment in CNI_* variables and the network config on
// stdin; the result or the error goes to stdout as JSON. A runtime passes
// no arguments: any (--help, --version) are a person's, and get a person's
// answer instead of the protocol's.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>

#include "cni/cni_error.hpp"
#include "cni/cni_version.hpp"
#include "cni/commands.hpp"
#include "cni/net_config.hpp"
#include "common/build_info.hpp"
#include "common/cli_exit.hpp"

namespace {

// A command line from a person: its help, its version or its usage error.
int answer_command_line(int argc, char** argv) {
    CLI::App app{
        "vnetd-cni: a CNI plugin (SPEC 1.1) that attaches pods to a vnetd switch.\n"
        "A container runtime runs it with CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME\n"
        "and CNI_PATH in the environment and the network config on stdin\n"
        "(docs/KUBERNETES.md); it takes no arguments."};
    app.set_version_flag("--version", vnet::build_info::version_line("vnetd-cni"));
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return vnet::exit_status_of(app, e);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace vnet::cni;
    if (argc > 1) {
        return answer_command_line(argc, argv);
    }
    std::string input;
    try {
        const CniEnv env = read_env([](const std::string& name) -> std::optional<std::string> {
            const char* v = std::getenv(name.c_str());
            return v ? std::optional<std::string>(v) : std::nullopt;
        });
        if (env.verb == Verb::version) {
            std::cout << version_json().dump() << "\n";  // stdin's version is not needed
            return 0;
        }
        input.assign(std::istreambuf_iterator<char>(std::cin), {});
        const NetConfig config = parse_net_config(input, env.verb);
        const nlohmann::json out = run_command(env, config);
        if (!out.is_null()) {
            std::cout << out.dump() << "\n";
        }
        return 0;
    } catch (const CniError& e) {
        std::cout << error_json(e, input.empty() ? "" : version_of(input)).dump() << "\n";
    } catch (const std::exception& e) {
        std::cout << error_json(CniError(ErrorCode::io_failure, e.what()),
                                input.empty() ? "" : version_of(input))
                         .dump()
                  << "\n";
    }
    return 1;
}
