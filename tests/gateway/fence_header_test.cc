// End-to-end: a route's fence_header (docs/gateway.md, "Fence header"). Every guarded forward of
// the route carries the key's fence in that header, over any value the client sent; the
// completer's resend after a takeover carries its own, greater fence, so an upstream can refuse
// the older holder. A route without it sends none.
#include <signal.h>

#include <cctype>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "gateway_fixture.h"
#include "scripted_upstream.h"

namespace idem::e2e {
namespace {

using Reply = ScriptedUpstream::Reply;

const char kFenceHeaderConfig[] = R"(
lease = "2s"
upstream_timeout = "1s"
recover_interval = "500ms"

[[route]]
path_prefix = "/charges"
recover = "resend"
fence_header = "Idempotency-Fence"

[[route]]
path_prefix = "/plain"
)";

// The values of header `name` in a request head (any case), in order.
std::vector<std::string> HeaderValues(const std::string& head, const std::string& name) {
  std::vector<std::string> values;
  std::string lower_head = head, lower_name = name + ":";
  for (char& c : lower_head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (char& c : lower_name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (size_t at = lower_head.find("\r\n" + lower_name); at != std::string::npos;
       at = lower_head.find("\r\n" + lower_name, at + 2)) {
    const size_t start = at + 2 + lower_name.size();
    const size_t end = head.find("\r\n", start);
    std::string value = head.substr(start, end - start);
    value.erase(0, value.find_first_not_of(' '));
    values.push_back(value);
  }
  return values;
}

// An upstream that keeps every request head and answers 201, or holds a request of key `hold`
// until Release() (its gateway is killed meanwhile).
class RecordingUpstream {
 public:
  RecordingUpstream()
      : upstream_([this](const std::string& head) {
          std::unique_lock<std::mutex> lock(mu_);
          heads_.push_back(head);
          if (!hold_.empty() && head.find(hold_) != std::string::npos && !held_once_) {
            held_once_ = true;
            released_cv_.wait_for(lock, std::chrono::seconds(20), [&] { return released_; });
          }
          return Reply{ScriptedUpstream::Answer("201 Created", R"({"id":"ch_1"})",
                                                "Content-Type: application/json\r\n")};
        }) {}
  ~RecordingUpstream() { Release(); }

  std::string Url() const { return upstream_.Url(); }
  void HoldFirstRequestOf(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = "Idempotency-Key: " + key;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    released_cv_.notify_all();
  }
  std::vector<std::string> Heads() {
    std::lock_guard<std::mutex> lock(mu_);
    return heads_;
  }

 private:
  std::mutex mu_;
  std::condition_variable released_cv_;
  std::vector<std::string> heads_;
  std::string hold_;
  bool held_once_ = false, released_ = false;
  ScriptedUpstream upstream_;  // last: its thread stops before the members it uses go
};

class FenceHeaderE2E : public GatewayFixture {};

TEST_F(FenceHeaderE2E, EveryGuardedForwardCarriesItsKeysFenceOverTheClientsValue) {
  RecordingUpstream upstream;
  StartGateway({"--config", Config(kFenceHeaderConfig)}, upstream.Url());
  const Response first = Post("fence-1", kBody, {{"Idempotency-Fence", "999999999"}});
  EXPECT_EQ(first.status, 201) << first.body;
  const Response second = Post("fence-2");
  EXPECT_EQ(second.status, 201) << second.body;
  EXPECT_EQ(Send(port_, "POST", "/plain", {{"Idempotency-Key", "fence-3"}}, kBody).status, 201);
  const std::vector<std::string> heads = upstream.Heads();
  ASSERT_EQ(heads.size(), 3u);
  const std::vector<std::string> one = HeaderValues(heads[0], "Idempotency-Fence");
  const std::vector<std::string> two = HeaderValues(heads[1], "Idempotency-Fence");
  ASSERT_EQ(one.size(), 1u) << heads[0];  // the client's value replaced, not added to
  ASSERT_EQ(two.size(), 1u) << heads[1];
  EXPECT_NE(one[0], "999999999");
  EXPECT_GT(std::stoll(one[0]), 0);
  EXPECT_GT(std::stoll(two[0]), std::stoll(one[0]));  // fences grow at every claim
  EXPECT_TRUE(HeaderValues(heads[2], "Idempotency-Fence").empty()) << heads[2];
}

TEST_F(FenceHeaderE2E, TheCompletersResendCarriesItsOwnGreaterFence) {
  RecordingUpstream upstream;
  upstream.HoldFirstRequestOf("fence-r");
  const std::string config = Config(kFenceHeaderConfig);
  StartGateway({"--config", config}, upstream.Url());
  const int other_port = FreePort(), other_admin = FreePort();
  auto other =
      Spawn(other_port, other_admin, {"--config", config}, upstream.Url(), dir_ + "/idem-b.log");
  ASSERT_TRUE(other->Running()) << ReadFile(dir_ + "/idem-b.log");
  std::thread client([&] { Post("fence-r"); });
  ASSERT_TRUE(Eventually([&] { return upstream.Heads().size() == 1; }));
  gateway_->Signal(SIGKILL);
  EXPECT_EQ(gateway_->Wait(std::chrono::seconds(10)), 128 + SIGKILL);
  client.join();
  upstream.Release();
  ASSERT_TRUE(Eventually([&] { return upstream.Heads().size() == 2; }))
      << ReadFile(dir_ + "/idem-b.log");
  const std::vector<std::string> heads = upstream.Heads();
  const std::vector<std::string> first = HeaderValues(heads[0], "Idempotency-Fence");
  const std::vector<std::string> resend = HeaderValues(heads[1], "Idempotency-Fence");
  ASSERT_EQ(first.size(), 1u) << heads[0];
  ASSERT_EQ(resend.size(), 1u) << heads[1];
  EXPECT_NE(heads[1].find("fence-r"), std::string::npos) << heads[1];  // the same key again
  EXPECT_GT(std::stoll(resend[0]), std::stoll(first[0]));
  const std::string completed = "idem_recovered_keys_total{result=\"completed\"}";
  EXPECT_TRUE(Eventually(
      [&] { return MetricValue(Send(other_admin, "GET", "/metrics").body, completed) == 1; }));
}

}  // namespace
}  // namespace idem::e2e
