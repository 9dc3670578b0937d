#include "sim/occ_simulation.h"

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <queue>
#include <random>
#include <vector>

#include "absl/status/status.h"

namespace idem::sim {
namespace {

// A message arriving somewhere. The row lives on the server; each client's state is only its
// attempt counter and backoff.
enum class Arrival { kReadAtServer, kReadReplyAtClient, kWriteAtServer, kWriteReplyAtClient };

struct Event {
  double time_ms;
  std::uint64_t sequence;  // breaks ties in time, so the order never depends on the heap
  int client;
  Arrival arrival;
  std::int64_t value;  // the version read or offered; for a write reply, 1 if it won
};

struct Later {
  bool operator()(const Event& a, const Event& b) const {
    if (a.time_ms != b.time_ms) return a.time_ms > b.time_ms;
    return a.sequence > b.sequence;
  }
};

struct Client {
  int attempt = 0;
  std::unique_ptr<ClientBackoff> backoff;
};

class Simulation {
 public:
  Simulation(const OccRunConfig& config, std::uint64_t seed)
      : config_(config), rng_(seed), hop_(config.network.mean_ms, config.network.sd_ms) {}

  OccRunResult Run() {
    clients_.resize(static_cast<std::size_t>(config_.clients));
    for (int c = 0; c < config_.clients; ++c) {
      clients_[static_cast<std::size_t>(c)].backoff =
          MakeClientBackoff(config_.strategy, config_.backoff);
      Send(0, c, Arrival::kReadAtServer, 0);
    }
    while (!queue_.empty()) {
      const Event event = queue_.top();
      queue_.pop();
      now_ms_ = event.time_ms;
      Handle(event);
    }
    return OccRunResult{writes_, now_ms_};
  }

 private:
  double Hop() { return std::abs(hop_(rng_)); }

  void Send(double extra_ms, int client, Arrival arrival, std::int64_t value) {
    queue_.push(Event{now_ms_ + Hop() + extra_ms, next_sequence_++, client, arrival, value});
  }

  void Handle(const Event& event) {
    switch (event.arrival) {
      case Arrival::kReadAtServer:
        Send(0, event.client, Arrival::kReadReplyAtClient, version_);
        return;
      case Arrival::kReadReplyAtClient:
        Send(0, event.client, Arrival::kWriteAtServer, event.value);
        return;
      case Arrival::kWriteAtServer: {
        ++writes_;
        const bool won = event.value == version_;
        if (won) ++version_;
        Send(0, event.client, Arrival::kWriteReplyAtClient, won ? 1 : 0);
        return;
      }
      case Arrival::kWriteReplyAtClient:
        if (event.value == 0) Retry(event.client);
        return;
    }
  }

  // The attempt counter goes up before the first backoff, as in the study.
  void Retry(int client) {
    Client& state = clients_[static_cast<std::size_t>(client)];
    ++state.attempt;
    const double delay_ms = state.backoff->NextDelayMs(state.attempt, rng_);
    Send(delay_ms, client, Arrival::kReadAtServer, 0);
  }

  const OccRunConfig& config_;
  std::mt19937_64 rng_;
  std::normal_distribution<double> hop_;
  std::priority_queue<Event, std::vector<Event>, Later> queue_;
  std::vector<Client> clients_;
  std::uint64_t next_sequence_ = 0;
  std::int64_t version_ = 0;
  std::int64_t writes_ = 0;
  double now_ms_ = 0;
};

absl::Status Validate(const OccRunConfig& config) {
  if (config.clients < 1) {
    return absl::InvalidArgumentError(
        fmt::format("clients must be at least 1, got {}", config.clients));
  }
  if (!(config.backoff.base_ms > 0) || !(config.backoff.cap_ms >= config.backoff.base_ms)) {
    return absl::InvalidArgumentError(
        fmt::format("backoff needs 0 < base <= cap, got base {} ms and cap {} ms",
                    config.backoff.base_ms, config.backoff.cap_ms));
  }
  if (!(config.network.mean_ms >= 0) || !(config.network.sd_ms > 0)) {
    return absl::InvalidArgumentError(
        fmt::format("network delay needs mean >= 0 and sd > 0, got {} and {}",
                    config.network.mean_ms, config.network.sd_ms));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OccRunResult> SimulateOccRun(const OccRunConfig& config, std::uint64_t seed) {
  if (absl::Status status = Validate(config); !status.ok()) return status;
  return Simulation(config, seed).Run();
}

}  // namespace idem::sim
