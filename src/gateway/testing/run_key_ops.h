// Test helper: submits key operations to a KeyService and waits for every result on an
// io_context of its own.
#ifndef IDEM_GATEWAY_TESTING_RUN_KEY_OPS_H_
#define IDEM_GATEWAY_TESTING_RUN_KEY_OPS_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "gateway/key_service.h"

namespace idem::gateway::testing {

// Submits every op, runs `then` once all are submitted, then runs an io_context until all results
// arrived; returns them in the order of `ops`.
inline std::vector<KeyOpResult> RunKeyOps(
    KeyService& service, std::vector<KeyOp> ops, const std::function<void()>& then = [] {}) {
  boost::asio::io_context ioc;
  std::vector<std::optional<KeyOpResult>> got(ops.size());
  size_t arrived = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    service.Submit(std::move(ops[i]), ioc.get_executor(), [&, i](KeyOpResult r) {
      got[i] = std::move(r);
      ++arrived;
    });
  }
  then();
  auto work = boost::asio::make_work_guard(ioc);
  while (arrived < got.size()) ioc.run_one();
  std::vector<KeyOpResult> out;
  for (auto& r : got) out.push_back(std::move(*r));
  return out;
}

}  // namespace idem::gateway::testing

#endif  // IDEM_GATEWAY_TESTING_RUN_KEY_OPS_H_
