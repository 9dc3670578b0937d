// A webhook consumer for the relay's scale tests: it applies each delivery once through the
// inbox of its own SQLite store (ConsumeOnce and an effect row, in one transaction), and checks
// that per aggregate the applied messages come in order. Payloads are "<aggregate>/<n>", n
// counting from 1 within the aggregate.
//
// Thread-safety: Receive runs on the receiver's thread; the other methods from any thread.
#ifndef IDEM_TESTS_RELAY_INBOX_CONSUMER_H_
#define IDEM_TESTS_RELAY_INBOX_CONSUMER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "http/test_server.h"
#include "idem/store.h"

namespace idem::testing {

class InboxConsumer final {
 public:
  // Opens (creates) the consumer's store at `path` (synchronous=normal: its durability is not
  // what the tests are about) with an effects table.
  explicit InboxConsumer(const std::string& path);
  InboxConsumer(const InboxConsumer&) = delete;
  InboxConsumer& operator=(const InboxConsumer&) = delete;

  // Answers one delivery: 200 once it is applied (or skipped as a redelivery), 500 when the
  // consumer's store failed (the relay retries).
  http::testing::ScriptedReply Receive(const http::testing::SeenRequest& request);

  // true once `n` distinct messages were applied, false if not within `limit`.
  bool WaitApplied(int64_t n, std::chrono::seconds limit);

  int64_t applied() const;                    // distinct messages applied
  int64_t redelivered() const;                // deliveries the inbox skipped
  std::vector<std::string> problems() const;  // order breaks, store errors, bad payloads
  // From the consumer's store: effect rows, and distinct message ids among them.
  int64_t EffectRows();
  int64_t DistinctEffectIds();

 private:
  std::unique_ptr<Store> store_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t applied_ = 0, redelivered_ = 0;
  std::map<std::string, int64_t> last_n_;  // per aggregate, the last n applied
  std::vector<std::string> problems_;
};

}  // namespace idem::testing

#endif  // IDEM_TESTS_RELAY_INBOX_CONSUMER_H_
