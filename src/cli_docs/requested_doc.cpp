#include "cli_docs/cli_docs.hpp"

namespace vnet::cli_docs {

std::optional<std::string> requested_doc(int argc, char** argv) {
    if (argc == 3 && std::string_view(argv[1]) == "--generate-doc") {
        return std::string(argv[2]);
    }
    return std::nullopt;
}

}  // namespace vnet::cli_docs
