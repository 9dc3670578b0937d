// The zoo of `idem check`'s own test APIs (docs/idem-check.md, "The zoo"): one small charges API
// whose behaviour is picked by a flaw name, each flaw a realistic way to break (or to keep while
// looking odd) an Idempotency-Key promise, served on a real loopback socket. The tests run the
// idem binary against each and compare its verdicts with the truth.
//
// Thread-safety: ZooApi::Handle and Effects may be called from any thread at once.
#ifndef IDEM_TESTS_CHECK_ZOO_API_H_
#define IDEM_TESTS_CHECK_ZOO_API_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace idem::check_zoo {

// The flaws (and correct variants) the zoo knows; see Handle for what each does.
inline constexpr const char* kFlaws[] = {
    "correct",           // claims the key atomically, 409 in flight, replays with a marker, 422
    "no-idempotency",    // runs every request, a new charge id each time
    "deterministic",     // runs every request, the same body each time, no marker
    "no-marker",         // correct, but replays carry no marker
    "forgets-after",     // correct, but keys are forgotten 500ms after their answer
    "racy",              // looks the key up, then runs, then stores: duplicates both run
    "forget-on-hangup",  // correct, but forgets the key when the client hung up before the answer
    "slow-effect",       // correct; each effect shows in the count 150ms after the answer
    "late-duplicate",    // answers like correct, but every run has a second effect 150ms later
    "transient-500",     // correct; a key's first request fails with 500, not kept
    "cache-500",         // a key's first request fails with 500, kept and replayed
    "needs-auth",        // correct, behind Authorization: Bearer zoo (401 without)
    "redirect",          // 301 to /v2/charges, which is correct
    "raw-keys",          // correct, but refuses a quoted key with 400
    "never-answers",     // reads the request, never answers
    "big-answer",        // correct, answers padded to 4 KiB
};

struct ZooRequest {
  std::string method, target, body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string Header(const std::string& name) const;  // any letter case; "" when absent
};

struct ZooReply {
  std::string bytes;  // a whole answer; written, then the connection closed
  bool hang = false;  // write nothing; keep the connection open until the server stops
};

class ZooApi {
 public:
  explicit ZooApi(std::string flaw) : flaw_(std::move(flaw)) {}

  // Answers one request. GET /count answers {"effects":N} (the effects visible now). POST runs a
  // charge by the flaw's rules; `client_gone` says whether the client has hung up.
  ZooReply Handle(const ZooRequest& req, const std::function<bool()>& client_gone);
  int Effects() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    std::string body;    // of the request that claimed the key
    std::string answer;  // the whole answer; empty while in flight
    Clock::time_point done_at;
  };
  // Runs the charge: counts its effect(s), returns its answer.
  std::string Run(const ZooRequest& req);
  ZooReply Keyed(const ZooRequest& req, const std::string& key,
                 const std::function<bool()>& client_gone);
  ZooReply Racy(const ZooRequest& req, const std::string& key);

  const std::string flaw_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> keys_;
  std::set<std::string> failed_once_;       // transient-500: keys already failed
  std::vector<Clock::time_point> effects_;  // when each effect shows in the count
  int charges_ = 0;
};

// A thread per connection, plain HTTP/1.1 on 127.0.0.1 (a free port).
class ZooServer {
 public:
  explicit ZooServer(ZooApi& api);
  ~ZooServer();
  ZooServer(const ZooServer&) = delete;
  ZooServer& operator=(const ZooServer&) = delete;
  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  int port() const { return port_; }

 private:
  void AcceptLoop();
  void Serve(int fd);

  ZooApi& api_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::thread> workers_;
  std::thread acceptor_;
};

// Parses one whole request in `in` (head and a Content-Length body); false when incomplete.
bool ParseRequest(const std::string& in, ZooRequest& req, size_t& used);

}  // namespace idem::check_zoo

#endif  // IDEM_TESTS_CHECK_ZOO_API_H_
