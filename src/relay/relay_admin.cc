#include "relay/relay_admin.h"

namespace idem::relay {
namespace {

boost::asio::awaitable<http::AdminReply> Answer(const RelayMetrics* metrics,
                                                std::string_view path) {
  http::AdminReply reply;
  if (path == "/healthz") {
    reply.body = "ok\n";
  } else if (path == "/metrics") {
    reply.content_type = http::kPrometheusTextType;
    reply.body = metrics->Render();
  } else {
    reply.status = 404;
    reply.body = "admin endpoints: /healthz /metrics\n";
  }
  co_return reply;
}

}  // namespace

http::AdminHandler RelayAdminHandler(const RelayMetrics& metrics) {
  return [metrics = &metrics](std::string_view path) { return Answer(metrics, path); };
}

}  // namespace idem::relay
