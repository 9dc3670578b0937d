#include "gateway/key_service.h"

#include <utility>

namespace idem::gateway {
namespace {

LeaseWrite::Kind WriteKind(KeyOp::Kind kind) {
  switch (kind) {
    case KeyOp::Kind::kClaim:
      return LeaseWrite::Kind::kClaim;
    case KeyOp::Kind::kHeartbeat:
      return LeaseWrite::Kind::kHeartbeat;
    case KeyOp::Kind::kComplete:
      return LeaseWrite::Kind::kComplete;
    case KeyOp::Kind::kFailFinal:
      return LeaseWrite::Kind::kFailFinal;
    case KeyOp::Kind::kRelease:
    case KeyOp::Kind::kGet:
      break;
  }
  return LeaseWrite::Kind::kRelease;
}

}  // namespace

LeaseWrite ToLeaseWrite(KeyOp op) {
  return {.kind = WriteKind(op.kind),
          .scope = std::move(op.scope),
          .fingerprint = std::move(op.fingerprint),
          .owner = std::move(op.owner),
          .lease = op.lease,
          .fence = op.fence,
          .response = std::move(op.response),
          .claim_nonce = std::move(op.claim_nonce)};
}

KeyOpResult FromLeaseWriteResult(LeaseWriteResult result) {
  return {.status = std::move(result.status),
          .claimed = result.claimed,
          .taken_over = result.taken_over,
          .record = std::move(result.record),
          .lease_until_ms = result.lease_until_ms,
          .now_ms = result.now_ms};
}

}  // namespace idem::gateway
