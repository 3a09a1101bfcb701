// The control socket as a client sees it: one answer line per request line,
// requests split across writes, and the limits that keep a bad client from
// hurting the daemon.
#include "control/rpc/control_server.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

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
        methods.add("echo", "", ParamSchema({{"v", ParamType::any}}),
                    [](const json& p) { return p.value("v", json()); });
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
              "hod\":\"echo\",\"params\":{\"v\":1}}\n\n{\"jsonrpc\":\"2.0\",\"id\":2,"
              "\"method\":\"echo\",\"params\":{\"v\":2}}\n");
    EXPECT_EQ(json::parse(answer_line(c.get()))["result"], 1);
    EXPECT_EQ(json::parse(answer_line(c.get()))["result"], 2);
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

TEST_F(ControlServerTest, when_no_client_is_idle_one_over_the_limit_sees_eof) {
    options.max_clients = 2;
    options.root_reserved_clients = 0;
    ControlServer server(reactor, options, methods);
    UniqueFd a = connect_to(options.path);
    UniqueFd b = connect_to(options.path);
    // Both mid-request: neither may be closed to make room.
    send_text(a.get(), "{\"jsonrpc\"");
    send_text(b.get(), "{\"jsonrpc\"");
    for (int i = 0; i < 10; ++i) {
        reactor.run_once(5ms);
    }
    UniqueFd third = connect_to(options.path);
    EXPECT_TRUE(eof_within(third.get(), 2000ms));
    EXPECT_EQ(server.client_count(), 2u);
    a.reset();
    send_text(b.get(), ":\"2.0\",\"id\":9,\"method\":\"echo\"}\n");
    EXPECT_EQ(json::parse(answer_line(b.get()))["id"], 9);
    EXPECT_EQ(server.client_count(), 1u) << "a closed client is reaped";
}

TEST_F(ControlServerTest, idle_clients_cannot_lock_a_new_one_out) {
    // 17 idle connections against 16 slots (one kept for root): the
    // newest still gets in, and so does the one after it; the oldest idle
    // ones made room.
    ControlServer server(reactor, options, methods);
    std::vector<UniqueFd> idle;
    for (int i = 0; i < 17; ++i) {
        idle.push_back(connect_to(options.path));
        reactor.run_once(1ms);
    }
    UniqueFd late = connect_to(options.path);
    send_text(late.get(), "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"echo\"}\n");
    EXPECT_EQ(json::parse(answer_line(late.get()))["id"], 5);
    EXPECT_TRUE(eof_within(idle[0].get(), 2000ms)) << "the longest idle made room";
    EXPECT_EQ(server.client_count(), 17u) << "16 and root's reserved slot";
}

TEST_F(ControlServerTest, root_gets_its_reserved_slot_when_every_other_is_busy) {
    ASSERT_EQ(::geteuid(), 0u) << "the unit tests run as root (CI does)";
    options.max_clients = 2;
    ControlServer server(reactor, options, methods);
    UniqueFd a = connect_to(options.path);
    UniqueFd b = connect_to(options.path);
    send_text(a.get(), "{");
    send_text(b.get(), "{");
    reactor.run_once(5ms);
    UniqueFd root = connect_to(options.path);
    send_text(root.get(), "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"echo\"}\n");
    EXPECT_EQ(json::parse(answer_line(root.get()))["id"], 7);
    EXPECT_EQ(server.client_count(), 3u);
}

TEST_F(ControlServerTest, idle_and_unfinished_clients_are_closed_after_their_timeouts) {
    options.idle_timeout = 50ms;
    options.request_timeout = 50ms;
    ControlServer server(reactor, options, methods);
    UniqueFd idle = connect_to(options.path);
    UniqueFd slow = connect_to(options.path);
    send_text(slow.get(), "{\"jsonrpc\":");  // and never the rest
    EXPECT_TRUE(eof_within(idle.get(), 3000ms));
    EXPECT_TRUE(eof_within(slow.get(), 3000ms));
    EXPECT_EQ(server.client_count(), 0u);
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

TEST_F(ControlServerTest, a_client_that_never_reads_is_dropped_with_its_output_bounded) {
    // Small requests with big answers, many to a read: the bound holds
    // between any two requests, not only after the whole read.
    constexpr size_t kAnswer = 100 * 1024;
    methods.add("big", "", ParamSchema{},
                [](const json&) { return json(std::string(kAnswer, 'y')); });
    options.max_pending_output = 256 * 1024;
    ControlServer server(reactor, options, methods);
    UniqueFd c = connect_to(options.path);
    std::string requests;
    for (int i = 0; i < 1000; ++i) {
        requests += "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"big\"}\n";
    }
    size_t sent = 0;
    size_t most_pending = 0;
    bool dropped = false;
    for (int i = 0; i < 2000 && !dropped; ++i) {
        if (sent < requests.size()) {
            const ssize_t n = ::send(c.get(), requests.data() + sent, requests.size() - sent,
                                     MSG_NOSIGNAL | MSG_DONTWAIT);
            sent += n > 0 ? static_cast<size_t>(n) : 0;
        }
        reactor.run_once(1ms);
        most_pending = std::max(most_pending, server.pending_output_bytes());
        dropped = server.client_count() == 0;
    }
    EXPECT_TRUE(dropped);
    EXPECT_LE(most_pending, options.max_pending_output + kAnswer + 64);
}

}  // namespace
}  // namespace vnet::control::rpc
