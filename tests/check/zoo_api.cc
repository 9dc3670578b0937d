#include "zoo_api.h"

#include <strings.h>

#include <algorithm>

namespace idem::check_zoo {
namespace {

using namespace std::chrono_literals;

constexpr auto kWork = 5ms;          // a charge's own time: duplicates sent at once overlap it
constexpr auto kRaceWindow = 3ms;    // racy: between looking the key up and storing it
constexpr auto kLateEffect = 150ms;  // slow-effect, late-duplicate
constexpr auto kForgetAfter = 500ms;

std::string Answer(const std::string& status, const std::string& body,
                   const std::string& headers = "") {
  return "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\n" + headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

// The stored answer with a replay marker after its status line.
std::string Marked(const std::string& answer) {
  const size_t eol = answer.find("\r\n");
  return answer.substr(0, eol + 2) + "Idempotent-Replayed: true\r\n" + answer.substr(eol + 2);
}

// A key the zoo takes: not empty, at most 255 characters, no control character, and when it is
// a Structured Fields string ("..."), a well-formed one.
bool GoodKey(const std::string& key) {
  if (key.empty() || key.size() > 255) return false;
  if (std::any_of(key.begin(), key.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20; })) {
    return false;
  }
  if (key.front() != '"') return true;
  if (key.size() < 3 || key.back() != '"') return false;
  for (size_t i = 1; i + 1 < key.size(); ++i) {
    if (key[i] == '\\') {
      if (key[i + 1] != '"' && key[i + 1] != '\\') return false;
      ++i;
    }
  }
  return true;
}

}  // namespace

std::string ZooRequest::Header(const std::string& name) const {
  for (const auto& [n, v] : headers) {
    if (strcasecmp(n.c_str(), name.c_str()) == 0) return v;
  }
  return "";
}

int ZooApi::Effects() const {
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  return static_cast<int>(
      std::count_if(effects_.begin(), effects_.end(), [&](auto t) { return t <= now; }));
}

std::string ZooApi::Run(const ZooRequest& req) {
  std::this_thread::sleep_for(kWork);
  std::lock_guard lock(mu_);
  const int id = ++charges_;
  const auto now = Clock::now();
  effects_.push_back(flaw_ == "slow-effect" ? now + kLateEffect : now);
  if (flaw_ == "late-duplicate") effects_.push_back(now + kLateEffect);
  if (flaw_ == "deterministic") return Answer("201 Created", R"({"status":"accepted"})");
  std::string body = R"({"id":"ch_)" + std::to_string(id) + R"(","request_bytes":)" +
                     std::to_string(req.body.size()) + "}";
  if (flaw_ == "big-answer") body += std::string(4096, ' ');
  return Answer("201 Created", body);
}

ZooReply ZooApi::Handle(const ZooRequest& req, const std::function<bool()>& client_gone) {
  if (req.method == "GET" && req.target == "/count") {
    return {Answer("200 OK", R"({"effects":)" + std::to_string(Effects()) + "}")};
  }
  if (flaw_ == "never-answers") return {.hang = true};
  if (flaw_ == "needs-auth" && req.Header("Authorization") != "Bearer zoo") {
    return {Answer("401 Unauthorized", R"({"error":"credentials required"})",
                   "WWW-Authenticate: Bearer\r\n")};
  }
  if (flaw_ == "redirect" && req.target != "/v2/charges") {
    return {Answer("301 Moved Permanently", R"({"moved":"/v2/charges"})",
                   "Location: http://" + req.Header("Host") + "/v2/charges\r\n")};
  }
  const std::string key = req.Header("Idempotency-Key");
  if (flaw_ == "raw-keys" && !key.empty() && key.front() == '"') {
    return {Answer("400 Bad Request", R"({"error":"a key is letters, digits and dashes"})")};
  }
  if (std::none_of(req.headers.begin(), req.headers.end(), [](const auto& h) {
        return strcasecmp(h.first.c_str(), "Idempotency-Key") == 0;
      })) {
    return {Run(req)};  // no key: nothing to guard
  }
  if (!GoodKey(key)) return {Answer("400 Bad Request", R"({"error":"malformed key"})")};
  if (flaw_ == "no-idempotency" || flaw_ == "deterministic") return {Run(req)};
  if (flaw_ == "racy") return Racy(req, key);
  return Keyed(req, key, client_gone);
}

ZooReply ZooApi::Racy(const ZooRequest& req, const std::string& key) {
  {
    std::lock_guard lock(mu_);
    if (auto it = keys_.find(key); it != keys_.end()) return {Marked(it->second.answer)};
  }
  std::this_thread::sleep_for(kRaceWindow);  // the store's round trip
  std::string answer = Run(req);
  std::lock_guard lock(mu_);
  keys_[key] = Entry{.body = req.body, .answer = answer, .done_at = Clock::now()};
  return {answer};
}

ZooReply ZooApi::Keyed(const ZooRequest& req, const std::string& key,
                       const std::function<bool()>& client_gone) {
  {
    std::lock_guard lock(mu_);
    auto it = keys_.find(key);
    if (it != keys_.end() && flaw_ == "forgets-after" && !it->second.answer.empty() &&
        Clock::now() - it->second.done_at > kForgetAfter) {
      keys_.erase(it);
      it = keys_.end();
    }
    if (it != keys_.end()) {
      if (it->second.body != req.body) {
        return {Answer("422 Unprocessable Content",
                       R"({"error":"this key was used with another request"})")};
      }
      if (it->second.answer.empty()) {
        return {Answer("409 Conflict", R"({"error":"in flight"})", "Retry-After: 1\r\n")};
      }
      return {flaw_ == "no-marker" ? it->second.answer : Marked(it->second.answer)};
    }
    if (flaw_ == "transient-500" && failed_once_.insert(key).second) {
      return {Answer("500 Internal Server Error", R"({"error":"try again"})")};
    }
    if (flaw_ == "cache-500") {
      const std::string failed = Answer("500 Internal Server Error", R"({"error":"try again"})");
      keys_[key] = Entry{.body = req.body, .answer = failed, .done_at = Clock::now()};
      return {failed};
    }
    keys_[key] = Entry{.body = req.body};  // claimed: in flight
  }
  std::string answer = Run(req);
  const bool forget = flaw_ == "forget-on-hangup" && client_gone();
  std::lock_guard lock(mu_);
  if (forget) {
    keys_.erase(key);  // "the request was aborted": its key goes, its charge stays
    return {answer};
  }
  keys_[key].answer = answer;
  keys_[key].done_at = Clock::now();
  return {answer};
}

}  // namespace idem::check_zoo
