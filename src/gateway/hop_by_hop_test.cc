#include "gateway/hop_by_hop.h"

#include <gtest/gtest.h>

namespace idem::gateway {
namespace {

TEST(DropClientHopByHopFields, DropsTheClientsConnectionFieldsButNotTheRequests) {
  http::request_header<> h;
  h.set(http::field::connection, "keep-alive, X-Secret, Upgrade, Content-Length");
  h.set("X-Secret", "1");
  h.set(http::field::upgrade, "websocket");
  h.set(http::field::keep_alive, "timeout=5");
  h.set(http::field::te, "trailers");
  h.set(http::field::content_length, "12");
  h.set("Idempotency-Key", "k");
  DropClientHopByHopFields(h);
  EXPECT_EQ(h[http::field::connection], "keep-alive");
  for (const char* gone : {"X-Secret", "Upgrade", "Keep-Alive", "TE"})
    EXPECT_EQ(h.count(gone), 0u) << gone;
  EXPECT_EQ(h[http::field::content_length], "12");  // the framing stays whatever Connection says
  EXPECT_EQ(h["Idempotency-Key"], "k");
}

TEST(DropUpstreamHopByHopFields, DropsTheUpstreamsConnectionFieldsButNotTheAnswersFraming) {
  http::fields f;
  f.set(http::field::connection, "keep-alive, X-Upstream-Only, Content-Length");
  f.set("X-Upstream-Only", "1");
  f.set(http::field::keep_alive, "timeout=5");
  f.set(http::field::content_length, "12");
  f.set("X-Charge-Id", "ch_1");
  DropUpstreamHopByHopFields(f);
  for (const char* gone : {"Connection", "X-Upstream-Only", "Keep-Alive"})
    EXPECT_EQ(f.count(gone), 0u) << gone;
  EXPECT_EQ(f[http::field::content_length], "12");
  EXPECT_EQ(f["X-Charge-Id"], "ch_1");
}

}  // namespace
}  // namespace idem::gateway
