#include "cli_docs/cli_docs.hpp"

#include <cctype>

#include "common/build_info.hpp"

namespace vnet::cli_docs {

std::string roff_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 8);
    for (char c : text) {
        if (c == '\\') {
            out += "\\e";
        } else if (c == '-') {
            out += "\\-";  // a real minus: man pages are searched and copied for flags
        } else {
            out += c;
        }
    }
    if (!out.empty() && (out[0] == '.' || out[0] == '\'')) {
        out.insert(0, "\\&");  // else roff reads the line as a request
    }
    return out;
}

std::string roff_header(std::string_view name, int section, std::string_view summary) {
    std::string upper(name);
    for (char& c : upper) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    // No date: the page must be the same in every build of one version.
    return ".TH " + upper + " " + std::to_string(section) + " \"\" \"vnetd " +
           std::string(build_info::version()) + "\" \"" +
           (section == 5 ? "File Formats" : "System Administration") + "\"\n.SH NAME\n" +
           roff_escape(name) + " \\- " + roff_escape(summary) + "\n";
}

std::string roff_paragraphs(std::string_view text) {
    std::string out;
    bool paragraph_open = false;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        const std::string_view line = text.substr(start, end - start);
        if (line.empty()) {
            paragraph_open = false;
        } else {
            if (!paragraph_open && !out.empty()) {
                out += ".PP\n";
            }
            paragraph_open = true;
            out += roff_escape(line) + "\n";
        }
        start = end + 1;
    }
    return out;
}

}  // namespace vnet::cli_docs
