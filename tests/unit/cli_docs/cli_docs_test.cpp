// The man page and bash completion writers on a small CLI11 tree shaped
// like vnetctl's: global options, a group with subcommands, positionals,
// a hidden option that neither may show.
#include "cli_docs/cli_docs.hpp"
#include "common/build_info.hpp"

#include <gtest/gtest.h>

namespace vnet::cli_docs {
namespace {

struct ToolTree {
    CLI::App app{"tool: does things"};
    std::string socket = "/run/tool.ctl", name, peer, config, secret;
    bool json = false;
    double watch = 0;
    ToolTree() {
        app.add_option("--socket", socket, "the socket")->capture_default_str();
        app.add_flag("--json", json, "print JSON");
        app.add_option("--secret", secret, "not for users")->group("");
        CLI::App* port = app.add_subcommand("port", "ports")->require_subcommand(1);
        CLI::App* add = port->add_subcommand("add", "add a port");
        add->add_option("name", name, "the port's name")->required();
        add->add_option("--peer", peer, "cross-connect it");
        add->add_option("--config", config, "a file")->type_name("FILE");
        port->add_subcommand("list", "list the ports");
        app.add_subcommand("stats", "counters")
            ->add_option("--watch", watch, "again every SECONDS")
            ->expected(0, 1);
    }
};

TEST(CliDocs, RoffEscapesDashesBackslashesAndLeadingDots) {
    EXPECT_EQ(roff_escape("--tx-batch"), "\\-\\-tx\\-batch");
    EXPECT_EQ(roff_escape("a\\b"), "a\\eb");
    EXPECT_EQ(roff_escape(".hidden"), "\\&.hidden");
    EXPECT_EQ(roff_escape("'quote"), "\\&'quote");
}

TEST(CliDocs, ManPageListsOptionsAndEveryLeafCommand) {
    ToolTree t;
    const std::string page = man_page(
        t.app, ManPageText{"tool", 8, "does things", "Line one.\n\nLine two.", "", "x(1)"});
    EXPECT_EQ(page.rfind(".TH TOOL 8 \"\" \"vnetd " + std::string(build_info::version()) + "\"", 0),
              0u)
        << page;
    EXPECT_NE(page.find(".SH NAME\ntool \\- does things\n"), std::string::npos);
    EXPECT_NE(page.find("Line one.\n.PP\nLine two.\n"), std::string::npos) << page;
    EXPECT_NE(page.find("\\fB\\-\\-socket\\fR \\fITEXT\\fR\nthe socket (default: /run/tool.ctl)"),
              std::string::npos)
        << page;
    EXPECT_NE(page.find("\\fBtool port add\\fR \\fIname\\fR [\\fIOPTIONS\\fR]\nadd a port"),
              std::string::npos)
        << page;
    EXPECT_NE(page.find("\\fBtool port list\\fR\nlist the ports"), std::string::npos) << page;
    EXPECT_NE(page.find("\\fB\\-\\-watch\\fR [\\fIFLOAT\\fR]"), std::string::npos) << page;
    EXPECT_NE(page.find("\\fB\\-\\-json\\fR\nprint JSON"), std::string::npos)
        << "a flag takes no value";
    EXPECT_EQ(page.find("secret"), std::string::npos) << "a hidden option is documented";
    EXPECT_EQ(page.find(".SH FILES"), std::string::npos);
    EXPECT_NE(page.find(".SH SEE ALSO\nx(1)\n"), std::string::npos);
}

TEST(CliDocs, BashCompletionOffersTheWordsOfEachLevel) {
    ToolTree t;
    const std::string script = bash_completion(t.app, "tool");
    EXPECT_NE(script.find("complete -F _tool tool\n"), std::string::npos) << script;
    EXPECT_NE(script.find("\"\") words=\"port stats --help -h --socket --json\""),
              std::string::npos)
        << script;
    EXPECT_NE(script.find("\"port\") words=\"add list --help -h\""), std::string::npos) << script;
    EXPECT_NE(script.find("\"port add\") words=\"--help -h --peer --config\""), std::string::npos)
        << script;
    EXPECT_NE(script.find("\"port\"|\"port add\"|\"port list\"|\"stats\") path="),
              std::string::npos)
        << script;
    // After --config a file name; after --socket or --peer nothing (a value).
    EXPECT_NE(script.find("    --config)\n        COMPREPLY=($(compgen -f"), std::string::npos)
        << script;
    EXPECT_NE(script.find("    --peer|--socket)\n        return ;;"), std::string::npos) << script;
    EXPECT_EQ(script.find("secret"), std::string::npos);
}

TEST(CliDocs, TheHiddenFlagIsTheWholeCommandLine) {
    char prog[] = "tool", flag[] = "--generate-doc", kind[] = "man", extra[] = "x";
    char* exact[] = {prog, flag, kind};
    EXPECT_EQ(requested_doc(3, exact), std::optional<std::string>("man"));
    char* more[] = {prog, flag, kind, extra};
    EXPECT_EQ(requested_doc(4, more), std::nullopt);
    char* none[] = {prog, kind};
    EXPECT_EQ(requested_doc(2, none), std::nullopt);
}

}  // namespace
}  // namespace vnet::cli_docs
