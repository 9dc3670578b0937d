// idem serve and idem relay under a service manager (issue 26, item 2): they tell systemd
// READY=1 once the store is open and the listeners bound (a unit of Type=notify, NOTIFY_SOCKET
// in the environment), STOPPING=1 at SIGTERM, and a SIGHUP (systemctl reload) neither stops them
// nor changes what they do: it is said on stderr. The notification socket is the test's own.
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace idem::e2e {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A datagram socket standing for systemd's notification socket.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    bound_ = fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~NotifySocket() {
    if (fd_ >= 0) close(fd_);
    std::filesystem::remove(path_);
  }
  bool bound() const { return bound_; }

  // The next datagram, or "" when none arrives within `bound`.
  std::string Next(milliseconds bound) {
    pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
    if (poll(&p, 1, static_cast<int>(bound.count())) != 1) return "";
    char buffer[4096];
    const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
    return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "";
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

class ServiceNotifyE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "idem-notify-XXXXXX";
    ASSERT_NE(mkdtemp(dir_.data()), nullptr);
    socket_ = std::make_unique<NotifySocket>(dir_ + "/notify");
    ASSERT_TRUE(socket_->bound());
  }
  void TearDown() override {
    socket_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::unique_ptr<Child> Start(const std::vector<std::string>& args, const std::string& log) {
    std::vector<std::string> argv = {"/usr/bin/env", "NOTIFY_SOCKET=" + dir_ + "/notify",
                                     IDEM_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<Child>(argv, log);
  }
  // Starts idem serve and waits for its READY=1; returns its admin port.
  std::unique_ptr<Child> StartServe(int& admin_port) {
    admin_port = FreePort();
    auto serve = Start(
        {"serve", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:" + std::to_string(admin_port),
         "--upstream", "http://127.0.0.1:" + std::to_string(admin_port), "--store",
         "sqlite:" + dir_ + "/idem.db"},
        dir_ + "/serve.log");
    const std::string ready = socket_->Next(seconds(30));
    EXPECT_EQ(ready.rfind("READY=1\n", 0), 0u) << ready << ReadFile(dir_ + "/serve.log");
    EXPECT_NE(ready.find("STATUS=listening on 127.0.0.1:"), std::string::npos) << ready;
    return serve;
  }

  std::string dir_;
  std::unique_ptr<NotifySocket> socket_;
};

TEST_F(ServiceNotifyE2E, ServeSaysReadyOnceItsAdminListenerAnswersAndStoppingAtSigterm) {
  int admin = 0;
  std::unique_ptr<Child> serve = StartServe(admin);
  // READY=1 came after the listeners were bound: the admin listener answers at once.
  EXPECT_EQ(Send(admin, "GET", "/healthz").status, 200);
  serve->Signal(SIGTERM);
  const std::string stopping = socket_->Next(seconds(30));
  EXPECT_EQ(stopping.rfind("STOPPING=1\n", 0), 0u) << stopping;
  EXPECT_EQ(serve->Wait(seconds(30)), 0) << ReadFile(dir_ + "/serve.log");
}

TEST_F(ServiceNotifyE2E, ServeKeepsServingAfterSighupAndSaysItDidNotReload) {
  int admin = 0;
  std::unique_ptr<Child> serve = StartServe(admin);
  serve->Signal(SIGHUP);
  ASSERT_TRUE(Eventually([&] {
    return ReadFile(dir_ + "/serve.log").find("SIGHUP: nothing to reload") !=
           std::string::npos;
  })) << ReadFile(dir_ + "/serve.log");
  EXPECT_TRUE(serve->Running());
  EXPECT_EQ(Send(admin, "GET", "/healthz").status, 200);
  serve->Signal(SIGTERM);
  EXPECT_EQ(serve->Wait(seconds(30)), 0) << ReadFile(dir_ + "/serve.log");
}

TEST_F(ServiceNotifyE2E, RelaySaysReadyKeepsRunningAfterSighupAndStopsAtSigterm) {
  int admin = 0;
  {
    std::unique_ptr<Child> serve = StartServe(admin);  // creates the store
    serve->Signal(SIGTERM);
    ASSERT_EQ(socket_->Next(seconds(30)).rfind("STOPPING=1\n", 0), 0u);
    ASSERT_EQ(serve->Wait(seconds(30)), 0);
  }
  std::unique_ptr<Child> relay =
      Start({"relay", "--store", "sqlite:" + dir_ + "/idem.db", "--sink", "http", "--url",
             "http://127.0.0.1:" + std::to_string(FreePort()) + "/hooks", "--secret",
             "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
            dir_ + "/relay.log");
  const std::string ready = socket_->Next(seconds(30));
  EXPECT_EQ(ready.rfind("READY=1\n", 0), 0u) << ready << ReadFile(dir_ + "/relay.log");
  relay->Signal(SIGHUP);
  ASSERT_TRUE(Eventually([&] {
    return ReadFile(dir_ + "/relay.log").find("idem relay: SIGHUP: nothing to reload") !=
           std::string::npos;
  })) << ReadFile(dir_ + "/relay.log");
  EXPECT_TRUE(relay->Running());
  relay->Signal(SIGTERM);
  const std::string stopping = socket_->Next(seconds(30));
  EXPECT_EQ(stopping.rfind("STOPPING=1\n", 0), 0u) << stopping;
  EXPECT_EQ(relay->Wait(seconds(30)), 0) << ReadFile(dir_ + "/relay.log");
}

}  // namespace
}  // namespace idem::e2e
