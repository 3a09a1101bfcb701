#include "control/metrics/metrics.hpp"

#include <microhttpd.h>
#include <prometheus/text_serializer.h>

#include <cstring>
#include <stdexcept>

#include "control/metrics/listen_address.hpp"

namespace vnet::control {

std::shared_ptr<MetricsCollector> MetricsCollector::make(Runner runner) {
    return std::shared_ptr<MetricsCollector>(new MetricsCollector(std::move(runner)));
}

void MetricsCollector::add_source(MetricsSource source) {
    sources_.push_back(std::move(source));
}

MetricFamilies MetricsCollector::collect_here() const {
    MetricFamilies out;
    for (const MetricsSource& source : sources_) {
        source(out);
    }
    return out;
}

MetricFamilies MetricsCollector::Collect() const {
    if (!runner_) {
        return collect_here();
    }
    // The work may still run after a runner gave up waiting: it keeps the
    // collector and its result alive by itself.
    auto result = std::make_shared<MetricFamilies>();
    std::shared_ptr<const MetricsCollector> self = shared_from_this();
    if (!runner_([self, result] { *result = self->collect_here(); })) {
        return {};
    }
    return std::move(*result);
}

namespace {

// The text exposition format's type, as Prometheus asks for it.
constexpr const char* metrics_content_type = "text/plain; version=0.0.4; charset=utf-8";

MHD_Result answer(MHD_Connection* connection, unsigned status, const std::string& body,
                  const char* content_type) {
    MHD_Response* response = MHD_create_response_from_buffer(
        body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
    if (response == nullptr) {
        return MHD_NO;  // out of memory: libmicrohttpd drops the connection
    }
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) {
        MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    }
    const MHD_Result queued = MHD_queue_response(connection, status, response);
    MHD_destroy_response(response);
    return queued;
}

// libmicrohttpd's request handler, on its thread, called once the headers
// are in: every request is answered then (a body, if any, is not wanted).
// `url` comes without its query string.
MHD_Result serve(void* cls, MHD_Connection* connection, const char* url, const char* method,
                 const char* /*version*/, const char* /*upload_data*/, size_t* /*upload_data_size*/,
                 void** /*request_state*/) {
    if (std::strcmp(url, "/metrics") != 0) {
        return answer(connection, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n",
                      "text/plain; charset=utf-8");
    }
    if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
        std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        return answer(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n",
                      "text/plain; charset=utf-8");
    }
    // HEAD is collected too, for its Content-Length; libmicrohttpd sends no body.
    const auto& collector = *static_cast<const MetricsCollector*>(cls);
    try {
        return answer(connection, MHD_HTTP_OK,
                      prometheus::TextSerializer().Serialize(collector.Collect()),
                      metrics_content_type);
    } catch (const std::exception&) {
        return MHD_NO;  // no exception crosses into C: that scrape's connection is dropped
    }
}

}  // namespace

MetricsEndpoint::MetricsEndpoint(const std::string& address,
                                 std::shared_ptr<MetricsCollector> collector)
    : collector_(std::move(collector)) {
    // Refused in words first ("address in use", "bad address"): the
    // server's own failure says nothing an operator can act on.
    const MetricsListenAddress listen = resolve_metrics_address(address);
    // One thread of the server's own (poll or epoll): scrapes are
    // serialized on the control thread anyway. A few connections at once,
    // and a client that stalls is dropped, so none holds the endpoint.
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD;
    if (listen.ipv6()) {
        flags |= listen.dual_stack ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
    }
    daemon_ =
        MHD_start_daemon(flags, 0, nullptr, nullptr, &serve, collector_.get(), MHD_OPTION_SOCK_ADDR,
                         listen.sockaddr_ptr(), MHD_OPTION_CONNECTION_LIMIT, 16u,
                         MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    if (daemon_ == nullptr) {
        // Taken between the check and the server's own bind, most likely.
        throw std::runtime_error("metrics_address " + address + ": cannot listen");
    }
}

MetricsEndpoint::~MetricsEndpoint() {
    MHD_stop_daemon(daemon_);
}

std::vector<int> MetricsEndpoint::listening_ports() const {
    const MHD_DaemonInfo* info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
    if (info == nullptr || info->port == 0) {
        return {};
    }
    return {info->port};
}

}  // namespace vnet::control
