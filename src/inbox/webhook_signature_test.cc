#include "idem/webhook_signature.h"

#include <gtest/gtest.h>

namespace idem {
namespace {

using ::absl::StatusCode;

// The Standard Webhooks specification's example; the signature was computed independently with
// Python's hmac and base64 modules.
constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr char kId[] = "msg_p5jXN8AQM9LWM0D4loKWxJek";
constexpr int64_t kTimestamp = 1614265330;
constexpr char kBody[] = "{\"test\": 2432232314}";
constexpr char kSignature[] = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

std::string Key() { return *DecodeWebhookSecret(kSecret); }

TEST(WebhookSignature, SignsTheSpecificationsExample) {
  EXPECT_EQ(SignWebhook(Key(), kId, kTimestamp, kBody), kSignature);
}

TEST(WebhookSignature, VerifiesAGoodSignatureAmongSeveral) {
  EXPECT_TRUE(VerifyWebhook(Key(), kId, "1614265330", kSignature, kBody, kTimestamp).ok());
  const std::string several = std::string("v1a,zzz v1,AAAA ") + kSignature;
  EXPECT_TRUE(VerifyWebhook(Key(), kId, "1614265330", several, kBody, kTimestamp + 299).ok());
}

TEST(WebhookSignature, ChangedBodyIdOrKeyIsUnauthenticated) {
  EXPECT_EQ(VerifyWebhook(Key(), kId, "1614265330", kSignature, "{\"test\": 1}", kTimestamp).code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(VerifyWebhook(Key(), "msg_other", "1614265330", kSignature, kBody, kTimestamp).code(),
            StatusCode::kUnauthenticated);
  const std::string other_key = *DecodeWebhookSecret("whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
  EXPECT_EQ(VerifyWebhook(other_key, kId, "1614265330", kSignature, kBody, kTimestamp).code(),
            StatusCode::kUnauthenticated);
}

TEST(WebhookSignature, TimestampOutsideToleranceIsUnauthenticated) {
  EXPECT_EQ(VerifyWebhook(Key(), kId, "1614265330", kSignature, kBody, kTimestamp + 301).code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(VerifyWebhook(Key(), kId, "1614265330", kSignature, kBody, kTimestamp - 301).code(),
            StatusCode::kUnauthenticated);
  EXPECT_TRUE(VerifyWebhook(Key(), kId, "1614265330", kSignature, kBody, kTimestamp + 30, 60).ok());
}

TEST(WebhookSignature, MalformedHeadersAreInvalidArgument) {
  EXPECT_EQ(VerifyWebhook(Key(), "", "1614265330", kSignature, kBody, kTimestamp).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(VerifyWebhook(Key(), kId, "16142x", kSignature, kBody, kTimestamp).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(VerifyWebhook(Key(), kId, "", kSignature, kBody, kTimestamp).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(VerifyWebhook(Key(), kId, "1614265330", "v2,abc", kBody, kTimestamp).code(),
            StatusCode::kInvalidArgument);
}

TEST(WebhookSignature, MalformedSecretsAreInvalidArgumentWithoutEchoingThem) {
  for (const char* secret : {"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_!!!!notbase64",
                             "whsec_c2hvcnQ=", "whsec_Q"}) {
    absl::StatusOr<std::string> key = DecodeWebhookSecret(secret);
    EXPECT_EQ(key.status().code(), StatusCode::kInvalidArgument) << secret;
    const std::string rest = std::string(secret).substr(6);
    if (!rest.empty()) {
      EXPECT_EQ(key.status().message().find(rest), std::string::npos) << key.status();
    }
  }
}

TEST(WebhookSignature, SecretPaddingIsOptional) {
  const std::string padded = *DecodeWebhookSecret("whsec_AAECAwQFBgcICQoLDA0ODxA=");
  const std::string bare = *DecodeWebhookSecret("whsec_AAECAwQFBgcICQoLDA0ODxA");
  EXPECT_EQ(padded, bare);
  EXPECT_EQ(padded.size(), 17u);
  EXPECT_EQ(padded[16], '\x10');
}

}  // namespace
}  // namespace idem
