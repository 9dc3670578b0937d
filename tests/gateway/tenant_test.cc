// End-to-end: tenant scope (DESIGN §3). The tenant is the configured header's value, else the
// SHA-256 of Authorization, else one global scope, each in a namespace of its own: the same key
// under two tenants runs twice, under one tenant once.
#include "gateway_fixture.h"

namespace idem::e2e {
namespace {

class E2E_SUITE(TenantE2E) : public GatewayFixture {};
#define TenantE2E E2E_SUITE(TenantE2E)

bool Replayed(const Response& r) { return r.Header("Idempotent-Replayed") == "true"; }

TEST_F(TenantE2E, ConfiguredTenantHeaderScopesKeys) {
  StartGateway({"--tenant-header", "X-Tenant"});
  ASSERT_EQ(Post("order-1", kBody, {{"X-Tenant", "acme"}}).status, 201);
  const Response other = Post("order-1", kBody, {{"X-Tenant", "globex"}});
  EXPECT_EQ(other.status, 201);
  EXPECT_FALSE(Replayed(other));
  EXPECT_TRUE(Replayed(Post("order-1", kBody, {{"X-Tenant", "acme"}})));
  EXPECT_TRUE(Replayed(Post("order-1", kBody, {{"X-Tenant", "globex"}})));
  // The tenant header wins over Authorization.
  EXPECT_TRUE(Replayed(Post("order-1", kBody, {{"X-Tenant", "acme"}, {"Authorization", "x"}})));
  ExpectProblem(Post("order-1", kBody, {{"X-Tenant", "acme"}, {"X-Tenant", "globex"}}), 400);
  EXPECT_EQ(Stat("calls"), 2);
}

TEST_F(TenantE2E, WithoutTenantHeaderTheAuthorizationHashScopesKeys) {
  StartGateway({"--tenant-header", "X-Tenant"});
  ASSERT_EQ(Post("order-2", kBody, {{"Authorization", "Bearer alice"}}).status, 201);
  EXPECT_FALSE(Replayed(Post("order-2", kBody, {{"Authorization", "Bearer bob"}})));
  EXPECT_TRUE(Replayed(Post("order-2", kBody, {{"Authorization", "Bearer alice"}})));
  EXPECT_TRUE(Replayed(Post("order-2", kBody, {{"Authorization", "Bearer bob"}})));
  EXPECT_EQ(Stat("calls"), 2);
  // The raw credential is never stored as the tenant: only its SHA-256.
  const RunResult list =
      RunToExit({IDEM_BINARY, "keys", "list", "--store", store_, "--format", "json"}, dir_);
  EXPECT_EQ(list.exit_code, 0) << list.output;
  EXPECT_EQ(list.output.find("alice"), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("order-2"), std::string::npos) << list.output;
}

// Regression: header tenants and credential-derived ones shared one namespace, so a tenant header
// naming "auth:" and the SHA-256 of another client's Authorization replayed that client's answers,
// and an empty one the global scope's. Each source of tenant now has its own.
TEST_F(TenantE2E, ATenantHeaderCannotNameACredentialsScopeOrTheGlobalOne) {
  StartGateway({"--tenant-header", "X-Tenant"});
  // printf 'Bearer sk_victim' | sha256sum
  const std::string victim =
      "auth:28c522c79a7cdb18decc7af8b93a9c766aeeca64991a156109edba7efdc582ee";
  ASSERT_EQ(Post("order-5", kBody, {{"Authorization", "Bearer sk_victim"}}).status, 201);
  const Response forged = Post("order-5", kBody, {{"X-Tenant", victim}});
  EXPECT_EQ(forged.status, 201) << forged.body;
  EXPECT_FALSE(Replayed(forged)) << "the tenant header reached the credential's scope";
  ASSERT_EQ(Post("order-6").status, 201);  // the global scope
  const Response empty = Post("order-6", kBody, {{"X-Tenant", ""}});
  EXPECT_EQ(empty.status, 201) << empty.body;
  EXPECT_FALSE(Replayed(empty)) << "an empty tenant header reached the global scope";
  EXPECT_EQ(Stat("calls"), 4);
  // Each scope still replays its own.
  EXPECT_TRUE(Replayed(Post("order-5", kBody, {{"Authorization", "Bearer sk_victim"}})));
  EXPECT_TRUE(Replayed(Post("order-5", kBody, {{"X-Tenant", victim}})));
  EXPECT_TRUE(Replayed(Post("order-6")));
  EXPECT_EQ(Stat("calls"), 4);
}

TEST_F(TenantE2E, WithNeitherEveryRequestSharesOneGlobalScope) {
  StartGateway();
  ASSERT_EQ(Post("order-3").status, 201);
  EXPECT_TRUE(Replayed(Post("order-3")));
  // A tenant header nobody configured does not scope anything.
  EXPECT_TRUE(Replayed(Post("order-3", kBody, {{"X-Tenant", "acme"}})));
  EXPECT_FALSE(Replayed(Post("order-3", kBody, {{"Authorization", "Bearer carol"}})));
  EXPECT_EQ(Stat("calls"), 2);
}

}  // namespace
}  // namespace idem::e2e
