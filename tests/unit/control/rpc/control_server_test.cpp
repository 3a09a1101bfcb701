// The control socket as a client sees it: one answer line per request line,
// requests split across writes, and the limits that keep a bad client from
// hurting the daemon.
#include "control/rpc/control_server.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>

#include "io/epoll_reactor.hpp"
#include "io/unix_address.hpp"

namespace vnet::control::rpc {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

std::string temp_path() {
    static std::atomic<int> n{0};
    return "/tmp/vnet-ctl-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

UniqueFd connect_to(const std::string& path) {
    sockaddr_un addr;
    io::make_unix_address(path, &addr);
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        fd.reset();
    }
    return fd;
}

class ControlServerTest : public ::testing::Test {
protected:
    void SetUp() override {
        methods.add("echo", "", [](const json& p) { return p; });
        options.path = temp_path();
    }
    // Runs the loop until `fd` has a full line (or EOF), and returns it.
    std::string answer_line(int fd) {
        std::string got;
        const auto deadline = std::chrono::steady_clock::now() + 3s;
        while (std::chrono::steady_clock::now() < deadline) {
            reactor.run_once(5ms);
            char c;
            while (::recv(fd, &c, 1, MSG_DONTWAIT) == 1) {
                if (c == '\n') {
                    return got;
                }
                got += c;
            }
        }
        return "timeout:" + got;
    }
    bool eof_within(int fd, std::chrono::milliseconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            reactor.run_once(5ms);
            char buf[4096];
            const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n == 0) {
                return true;
            }
        }
        return false;
    }
    static void send_text(int fd, const std::string& s) {
        ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
    }

    io::EpollReactor reactor;
    MethodTable methods;
    ControlServerOptions options;
};

TEST_F(ControlServerTest, the_socket_has_its_mode_from_creation_and_goes_with_the_server) {
    options.mode = 0640;
    {
        ControlServer server(reactor, options, methods);
        struct stat st {};
        ASSERT_EQ(::stat(options.path.c_str(), &st), 0);
        EXPECT_TRUE(S_ISSOCK(st.st_mode));
        EXPECT_EQ(st.st_mode & 07777, 0640u);
    }
    struct stat st {};
    EXPECT_NE(::lstat(options.path.c_str(), &st), 0) << "removed at exit";
}

TEST_F(ControlServerTest, answers_each_line_even_when_it_arrives_in_pieces) {
    ControlServer server(reactor, options, methods);
    UniqueFd c = connect_to(options.path);
    ASSERT_TRUE(c.valid());
    send_text(c.get(), R"({"jsonrpc":"2.0","id":1,"met)");
    reactor.run_once(5ms);
    send_text(c.get(),
              "hod\":\"echo\",\"params\":[1]}\n\n{\"jsonrpc\":\"2.0\",\"id\":2,"
              "\"method\":\"echo\",\"params\":[2]}\n");
    EXPECT_EQ(json::parse(answer_line(c.get()))["result"], json({1}));
    EXPECT_EQ(json::parse(answer_line(c.get()))["result"], json({2}));
}

TEST_F(ControlServerTest, bad_json_is_answered_and_the_connection_stays_usable) {
    ControlServer server(reactor, options, methods);
    UniqueFd c = connect_to(options.path);
    send_text(c.get(), "{oops\n");
    EXPECT_EQ(json::parse(answer_line(c.get()))["error"]["code"], -32700);
    send_text(c.get(), "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"echo\"}\n");
    EXPECT_EQ(json::parse(answer_line(c.get()))["id"], 3);
}

TEST_F(ControlServerTest, a_line_over_the_limit_disconnects_that_client_only) {
    options.max_line_bytes = 1024;
    ControlServer server(reactor, options, methods);
    UniqueFd bad = connect_to(options.path);
    UniqueFd good = connect_to(options.path);
    send_text(bad.get(), std::string(4096, 'x'));
    EXPECT_TRUE(eof_within(bad.get(), 2000ms));
    send_text(good.get(), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\"}\n");
    EXPECT_EQ(json::parse(answer_line(good.get()))["id"], 1);
}

TEST_F(ControlServerTest, clients_over_the_limit_see_eof) {
    options.max_clients = 2;
    ControlServer server(reactor, options, methods);
    UniqueFd a = connect_to(options.path);
    UniqueFd b = connect_to(options.path);
    for (int i = 0; i < 10; ++i) {
        reactor.run_once(5ms);
    }
    UniqueFd third = connect_to(options.path);
    EXPECT_TRUE(eof_within(third.get(), 2000ms));
    EXPECT_EQ(server.client_count(), 2u);
    a.reset();
    send_text(b.get(), "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"echo\"}\n");
    EXPECT_EQ(json::parse(answer_line(b.get()))["id"], 9);
    EXPECT_EQ(server.client_count(), 1u) << "a closed client is reaped";
}

TEST_F(ControlServerTest, a_client_that_shuts_down_its_side_still_gets_its_answers) {
    ControlServer server(reactor, options, methods);
    UniqueFd c = connect_to(options.path);
    send_text(c.get(), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\"}\n");
    ::shutdown(c.get(), SHUT_WR);
    EXPECT_EQ(json::parse(answer_line(c.get()))["id"], 1);
    EXPECT_TRUE(eof_within(c.get(), 2000ms)) << "then the server closes";
    EXPECT_EQ(server.client_count(), 0u);
}

TEST_F(ControlServerTest, a_client_that_never_reads_is_dropped_at_the_output_limit) {
    options.max_pending_output = 64 * 1024;
    ControlServer server(reactor, options, methods);
    UniqueFd c = connect_to(options.path);
    const std::string big = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":[\"" +
                            std::string(60000, 'y') + "\"]}\n";
    bool dropped = false;
    for (int i = 0; i < 200 && !dropped; ++i) {
        if (::send(c.get(), big.data(), big.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
            errno == EPIPE) {
            dropped = true;
        }
        reactor.run_once(1ms);
        dropped = dropped || server.client_count() == 0;
    }
    EXPECT_TRUE(dropped);
}

}  // namespace
}  // namespace vnet::control::rpc
