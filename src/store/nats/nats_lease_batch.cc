// ApplyLeaseWrites: a batch's lease writes in rounds, each round's conditional writes published
// together (nats_lease_ops.h).
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/nats/nats_lease_ops.h"

namespace idem::nats {
namespace {

// The write a chain (the batch's writes on one scope, in order) is at.
struct Head {
  const std::vector<size_t>* chain;
  size_t position = 0;
  int attempt = 0;
  std::optional<Current> current;  // the entry this attempt decides from, once known
  bool done = false;               // the chain has no write left
};

// The writes of `writes` grouped by scope, each group in the batch's order.
std::vector<std::vector<size_t>> Chains(std::span<const LeaseWrite> writes) {
  std::vector<std::vector<size_t>> chains;
  std::map<std::pair<std::string, std::string>, size_t> chain_of;
  for (size_t i = 0; i < writes.size(); ++i) {
    auto [it, fresh] =
        chain_of.try_emplace({writes[i].scope.tenant, writes[i].scope.key}, chains.size());
    if (fresh) chains.emplace_back();
    chains[it->second].push_back(i);
  }
  return chains;
}

class Rounds {
 public:
  Rounds(Keyspace& keyspace, const LeaseRules& rules, std::span<const LeaseWrite> writes,
         bool batch)
      : keyspace_(keyspace), rules_(rules), writes_(writes), batch_(batch),
        results_(writes.size()) {}

  std::vector<LeaseWriteResult> Run() {
    const std::vector<std::vector<size_t>> chains = Chains(writes_);
    std::vector<Head> heads;
    for (const std::vector<size_t>& chain : chains) {
      heads.push_back({.chain = &chain});
      Begin(heads.back());
    }
    for (bool open = true; open;) {
      for (Head& head : heads) Prepare(head);
      Send(heads);
      open = false;
      for (const Head& head : heads) open = open || !head.done;
    }
    return std::move(results_);
  }

 private:
  size_t Index(const Head& head) const { return (*head.chain)[head.position]; }

  // Ends the head's write with `result` and moves on to the chain's next write.
  void Finish(Head& head, LeaseWriteResult result) {
    results_[Index(head)] = std::move(result);
    ++head.position;
    Begin(head);
  }

  // Starts the head's write at its first attempt, or finishes a write the rules refuse at once.
  void Begin(Head& head) {
    head.attempt = 0;
    head.current.reset();
    if (head.position >= head.chain->size()) {
      head.done = true;
      return;
    }
    if (absl::Status valid = CheckLeaseWrite(writes_[Index(head)]); !valid.ok()) {
      Finish(head, {.status = valid, .now_ms = rules_.clock.NowMillis()});
    }
  }

  // The entry the head's attempt decides from: none for a claim's first (a Create), the
  // remembered record for a fenced write's first if usable, else a read.
  void Prepare(Head& head) {
    while (!head.done && !head.current.has_value()) {
      const LeaseWrite& write = writes_[Index(head)];
      const int64_t now = rules_.clock.NowMillis();
      if (head.attempt == 0 && write.kind == LeaseWrite::Kind::kClaim) {
        head.current = Current{};
        return;
      }
      if (head.attempt == 0) {
        std::optional<Current> remembered = keyspace_.Remembered(write.scope);
        if (Usable(remembered, write, now)) {
          head.current = std::move(remembered);
          return;
        }
      }
      absl::StatusOr<Current> loaded = keyspace_.Load(write.scope);
      if (loaded.ok()) {
        head.current = *std::move(loaded);
      } else {
        Finish(head, {.status = loaded.status(), .now_ms = now});
      }
    }
  }

  // Decides every head's write; sends those that write, together; ends or retries each.
  void Send(std::vector<Head>& heads) {
    std::vector<Keyspace::Change> changes;
    std::vector<std::pair<Head*, LeaseWriteResult>> sent;
    for (Head& head : heads) {
      while (!head.done && head.current.has_value()) {
        const LeaseWrite& write = writes_[Index(head)];
        LeaseStep step = DecideLeaseWrite(rules_, write, batch_, *std::move(head.current),
                                          rules_.clock.NowMillis());
        head.current.reset();
        if (step.decided) {
          Finish(head, std::move(step.result));
          Prepare(head);  // the chain's next write may be ready to go in this round
          continue;
        }
        changes.push_back(std::move(step.change));
        sent.emplace_back(&head, std::move(step.result));
        break;
      }
    }
    if (changes.empty()) return;
    std::vector<absl::StatusOr<std::optional<KeyRecord>>> written =
        keyspace_.WriteMany(std::move(changes));
    for (size_t i = 0; i < sent.size(); ++i) {
      Head& head = *sent[i].first;
      LeaseWriteResult& result = sent[i].second;
      const LeaseWrite& write = writes_[Index(head)];
      if (!written[i].ok()) {
        Finish(head, {.status = written[i].status(), .now_ms = result.now_ms});
      } else if (!written[i]->has_value()) {  // the key moved on: read and decide again
        if (++head.attempt >= kMaxLeaseAttempts) {
          Finish(head, {.status = Contended(write.scope), .now_ms = result.now_ms});
        }
      } else {
        if (write.kind == LeaseWrite::Kind::kClaim) {
          result.claimed = true;
          result.record = std::move(**written[i]);
          result.lease_until_ms = result.record.lease_until_ms;
        }
        Finish(head, std::move(result));
      }
    }
  }

  Keyspace& keyspace_;
  const LeaseRules& rules_;
  std::span<const LeaseWrite> writes_;
  const bool batch_;
  std::vector<LeaseWriteResult> results_;
};

}  // namespace

std::vector<LeaseWriteResult> ApplyLeaseWrites(Keyspace& keyspace, const LeaseRules& rules,
                                               std::span<const LeaseWrite> writes, bool batch) {
  return Rounds(keyspace, rules, writes, batch).Run();
}

}  // namespace idem::nats
