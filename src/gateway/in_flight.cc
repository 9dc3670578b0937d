#include "gateway/in_flight.h"

#include <utility>

namespace idem::gateway {

void InFlight::BeginRequest() {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_;
}

void InFlight::EndRequest() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--requests_ == 0 && keys_.empty()) idle_.notify_all();
}

uint64_t InFlight::HoldKey(const Scope& scope, int64_t fence, SteadyTime lease_end,
                           boost::asio::any_io_executor executor,
                           boost::asio::cancellation_signal* cancel) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t ticket = next_ticket_++;
  keys_.emplace(ticket, HeldKey{.ticket = ticket,
                                .scope = scope,
                                .fence = fence,
                                .lease_end = lease_end,
                                .executor = std::move(executor),
                                .cancel = cancel});
  return ticket;
}

void InFlight::RenewKey(uint64_t ticket, SteadyTime lease_end) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(ticket);
  if (it != keys_.end() && lease_end > it->second.lease_end) it->second.lease_end = lease_end;
}

std::optional<InFlight::SteadyTime> InFlight::LeaseEnd(uint64_t ticket) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(ticket);
  if (it == keys_.end()) return std::nullopt;
  return it->second.lease_end;
}

void InFlight::StopRenewing(uint64_t ticket, bool releasing) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(ticket);
  if (it == keys_.end()) return;
  it->second.phase = Phase::kWriting;
  it->second.releasing = releasing;
}

void InFlight::KeepPending(uint64_t ticket, bool releasing) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(ticket);
  if (it == keys_.end()) return;
  it->second.phase = Phase::kPending;
  it->second.releasing = releasing;
}

bool InFlight::Renewing(uint64_t ticket) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(ticket);
  return it != keys_.end() && it->second.phase != Phase::kWriting;
}

bool InFlight::Running(uint64_t ticket) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(ticket);
  return it != keys_.end() && it->second.phase == Phase::kRunning;
}

std::optional<InFlight::HeldKey> InFlight::MarkLost(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(ticket);
  if (it == keys_.end()) return std::nullopt;
  it->second.lost = true;
  if (it->second.phase != Phase::kRunning) return std::nullopt;
  return it->second;
}

bool InFlight::Lost(uint64_t ticket) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(ticket);
  return it != keys_.end() && it->second.lost;
}

void InFlight::ForgetKey(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  keys_.erase(ticket);
  if (requests_ == 0 && keys_.empty()) idle_.notify_all();
}

bool InFlight::WaitIdle(std::chrono::milliseconds bound) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_.wait_for(lock, bound, [this] { return requests_ == 0 && keys_.empty(); });
}

std::vector<InFlight::HeldKey> InFlight::HeldKeys() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<HeldKey> out;
  for (const auto& [ticket, key] : keys_) out.push_back(key);
  return out;
}

}  // namespace idem::gateway
