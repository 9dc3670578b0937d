// idem-payments: the payments example (examples/payments/README.md).
//
//   idem-payments --listen HOST:PORT --store URI
//       the payments service (payment_service.h)
//   idem-payments consume --listen HOST:PORT --store URI --secret whsec_...
//       the consumer of its events, as `idem relay --sink http` delivers them (consumer.h)
//
// Stops on SIGTERM or SIGINT. Exit codes: 0 stopped, 1 could not start (store, address), 2 usage.
#include <cstdio>
#include <exception>
#include <map>
#include <string>

#include "consumer.h"
#include "http_server.h"
#include "idem/store.h"
#include "payment_service.h"

namespace {

constexpr const char* kUsage =
    R"(usage: idem-payments --listen HOST:PORT --store URI
       idem-payments consume --listen HOST:PORT --store URI --secret whsec_...

The payments service: POST /payments, POST /payments/ID/refunds, GET /payments/ID, each POST
with an Idempotency-Key. Each payment and refund adds one outbox message; `idem relay` sends them.
The consumer (consume) receives the relay's webhooks and keeps per-customer totals:
GET /customers/NAME.
A store is sqlite:PATH or postgresql://USER@HOST:PORT/DB.
)";

// Parses --name value pairs into `flags`; false on anything else.
bool ParseFlags(int argc, char** argv, int first, std::map<std::string, std::string>& flags) {
  for (int i = first; i < argc; i += 2) {
    const std::string name = argv[i];
    if (i + 1 >= argc || !flags.contains(name)) return false;
    flags[name] = argv[i + 1];
  }
  for (const auto& [name, value] : flags) {
    if (value.empty()) return false;
  }
  return true;
}

int Fail(const char* what, const absl::Status& status) {
  std::fprintf(stderr, "idem-payments: %s: %s\n", what, std::string(status.message()).c_str());
  return 1;
}

int RunService(const std::map<std::string, std::string>& flags) {
  auto service = idem::payments::PaymentService::Open(flags.at("--store"));
  if (!service.ok()) {
    return Fail(idem::RedactStoreUri(flags.at("--store")).c_str(), service.status());
  }
  absl::Status served = idem::payments::Serve(
      {.listen = flags.at("--listen"), .name = "idem-payments"},
      [&](const idem::payments::Request& request) { return (*service)->Handle(request); });
  return served.ok() ? 0 : Fail("cannot serve", served);
}

int RunConsumer(const std::map<std::string, std::string>& flags) {
  auto consumer = idem::payments::Consumer::Open(flags.at("--store"), flags.at("--secret"));
  if (!consumer.ok()) return Fail("cannot start the consumer", consumer.status());
  absl::Status served = idem::payments::Serve(
      {.listen = flags.at("--listen"), .name = "idem-payments consume"},
      [&](const idem::payments::Request& request) { return (*consumer)->Handle(request); });
  return served.ok() ? 0 : Fail("cannot serve", served);
}

int Run(int argc, char** argv) {
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const bool consume = argc > 1 && std::string(argv[1]) == "consume";
  std::map<std::string, std::string> flags = {{"--listen", ""}, {"--store", ""}};
  if (consume) flags["--secret"] = "";
  if (!ParseFlags(argc, argv, consume ? 2 : 1, flags)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  return consume ? RunConsumer(flags) : RunService(flags);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "idem-payments: %s\n", e.what());
    return 1;
  }
}
