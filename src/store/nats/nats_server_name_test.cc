// A server's name from its INFO line, and HOST:PORT from a libnats URL (no server needed).
#include "store/nats/nats_server_name.h"

#include <gtest/gtest.h>

namespace idem::nats {
namespace {

TEST(ServerNameOfInfo, ReadsTheNameOfAnInfoLine) {
  EXPECT_EQ(ServerNameOfInfo(R"(INFO {"server_id":"NABC","server_name":"idem-n2","version":"2.9.10"})"),
            "idem-n2");
  EXPECT_EQ(ServerNameOfInfo(R"(INFO {"server_name" : "a \"b\" \\c"})"), R"(a "b" \c)");
}

TEST(ServerNameOfInfo, NoNameIsNullopt) {
  EXPECT_FALSE(ServerNameOfInfo(R"(INFO {"server_id":"NABC","version":"2.1.0"})").has_value());
  EXPECT_FALSE(ServerNameOfInfo(R"(INFO {"server_name":""})").has_value());
  EXPECT_FALSE(ServerNameOfInfo(R"(INFO {"server_name":"cut)").has_value());
  EXPECT_FALSE(ServerNameOfInfo(R"(INFO {"server_name":12})").has_value());
}

TEST(HostPort, DropsTheSchemeAndTheCredentials) {
  EXPECT_EQ(HostPort("nats://u:p@10.0.0.1:4222"), "10.0.0.1:4222");
  EXPECT_EQ(HostPort("nats://127.0.0.1:4222"), "127.0.0.1:4222");
  EXPECT_EQ(HostPort("127.0.0.1:4222"), "127.0.0.1:4222");
  EXPECT_EQ(HostPort("nats://[::1]:4222/"), "[::1]:4222");
}

TEST(ProbeServerName, NoServerIsUnavailable) {
  // Port 1 on loopback: nothing listens there (connection refused at once).
  const absl::StatusOr<std::string> name = ProbeServerName("127.0.0.1:1", Millis(2000));
  EXPECT_EQ(name.status().code(), absl::StatusCode::kUnavailable) << name.status();
}

}  // namespace
}  // namespace idem::nats
