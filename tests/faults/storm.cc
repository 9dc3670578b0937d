#include "storm.h"

#include <barrier>
#include <random>
#include <sstream>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/json.hpp>
#pragma GCC diagnostic pop

namespace idem::faults {

namespace json = boost::json;
using Steady = std::chrono::steady_clock;

// The two clients of a pair meet at `sync` before each key; its completion, run once both have
// arrived (so neither is still sending the key before), draws the next key for both.
struct Storm::Pair {
  struct Draw {
    Storm* storm;
    Pair* pair;
    void operator()() noexcept {
      pair->key = storm->stop_.load() ? storm->options_.keys : storm->next_key_.fetch_add(1);
    }
  };
  explicit Pair(Storm* storm) : sync(2, Draw{storm, this}) {}
  int key = -1;
  std::barrier<Draw> sync;
};

Storm::Storm(StormOptions options) : options_(std::move(options)) {
  results_.resize(static_cast<size_t>(options_.keys));
  for (int i = 0; i < options_.keys; ++i) results_[static_cast<size_t>(i)].key = Key(i);
}

Storm::~Storm() {
  stop_ = true;
  for (std::thread& t : threads_) t.join();
}

std::string Storm::Key(int i) const { return options_.key_prefix + "-" + std::to_string(i); }

std::string Storm::Body(int i) const {
  return R"({"amount":)" + std::to_string(1000 + i) + R"(,"currency":"eur","order":")" + Key(i) +
         R"("})";
}

void Storm::Start() {
  for (int p = 0; p < options_.pairs; ++p) pair_state_.push_back(std::make_unique<Pair>(this));
  for (int p = 0; p < options_.pairs; ++p) {
    for (int side = 0; side < 2; ++side)
      threads_.emplace_back([this, p, side] { RunPair(p, side); });
  }
}

void Storm::RunPair(int pair, int side) {
  Pair& state = *pair_state_[static_cast<size_t>(pair)];
  for (;;) {
    state.sync.arrive_and_wait();  // both clients send the key at the same moment
    const int key = state.key;
    if (key >= options_.keys) break;
    results_[static_cast<size_t>(key)].clients[static_cast<size_t>(side)] = RunClient(key, side);
  }
  ++clients_done_;
}

ClientResult Storm::RunClient(int key, int side) {
  thread_local std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> backoff_ms(50, 150);
  const int port = options_.ports[static_cast<size_t>(side)];
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"Idempotency-Key", Key(key)},
      {"Content-Type", "application/json"},
      {"X-Charges-Delay-Ms", std::to_string(options_.upstream_delay_ms)}};
  const std::string body = Body(key);
  const auto start = Steady::now();
  ClientResult out;
  while (!stop_.load()) {
    const e2e::Response r = e2e::Send(port, "POST", "/charges", headers, body);
    ++out.attempts;
    out.status = r.status;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++statuses_[r.status];
    }
    const bool retryable = r.status == 0 || r.status == 409 || r.status >= 500;
    if (!retryable) {
      out.final = true;
      if (r.status == 201) {
        out.charge_id = ChargeId(r.body);
        ++answers_;
      }
      return out;
    }
    if (Steady::now() - start >= options_.key_bound) return out;
    // A client's pause between retries (its backoff), not a synchronisation.
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms(random)));
  }
  return out;
}

bool Storm::WaitForAnswers(int64_t n, std::chrono::milliseconds bound) const {
  return e2e::Eventually([&] { return answers_.load() >= n; }, bound);
}

bool Storm::Finish(std::chrono::milliseconds bound) {
  if (!e2e::Eventually([&] { return clients_done_.load() == 2 * options_.pairs; }, bound))
    return false;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  return true;
}

std::map<int, int64_t> Storm::StatusCounts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return statuses_;
}

std::string Storm::StatusSummary() const {
  std::ostringstream out;
  for (const auto& [status, count] : StatusCounts())
    out << (status == 0 ? std::string("no answer") : std::to_string(status)) << ": " << count
        << "  ";
  return out.str();
}

UpstreamLedger ParseStats(const std::string& stats) {
  UpstreamLedger out;
  boost::system::error_code ec;
  const json::value parsed = json::parse(stats, ec);
  if (ec || !parsed.is_object()) return out;
  const json::object& object = parsed.as_object();
  if (const json::value* keys = object.if_contains("keys"); keys != nullptr && keys->is_array()) {
    for (const json::value& key : keys->as_array())
      if (key.is_string()) ++out.calls[std::string(key.as_string())];
  }
  if (const json::value* keys = object.if_contains("charge_keys");
      keys != nullptr && keys->is_array()) {
    int n = 0;
    for (const json::value& key : keys->as_array()) {
      ++n;  // the Nth charge is ch_N
      if (key.is_string())
        out.charges[std::string(key.as_string())].push_back("ch_" + std::to_string(n));
    }
  }
  return out;
}

std::string ChargeId(const std::string& body) {
  boost::system::error_code ec;
  const json::value parsed = json::parse(body, ec);
  if (ec || !parsed.is_object()) return "";
  const json::value* id = parsed.as_object().if_contains("id");
  return id != nullptr && id->is_string() ? std::string(id->as_string()) : "";
}

std::string Verdict::Summary() const {
  std::ostringstream out;
  out << keys << " keys: ran twice or more " << ran_twice << ", two answers " << two_answers
      << ", a client's answer not the recorded one " << answer_not_recorded
      << ", recorded answer not the last execution " << recorded_not_last << ", unrecorded "
      << unrecorded << ", unanswered " << unanswered;
  for (const std::string& line : examples) out << "\n  " << line;
  return out.str();
}

namespace {

std::string Describe(const ClientResult& c) {
  std::string out = c.final ? std::to_string(c.status)
                            : "no final answer (last " + std::to_string(c.status) + ")";
  if (!c.charge_id.empty()) out += " " + c.charge_id;
  return out + " after " + std::to_string(c.attempts) + " sends";
}

}  // namespace

Verdict CheckStorm(const Storm& storm, const UpstreamLedger& upstream,
                   const std::function<e2e::Response(int)>& replay) {
  Verdict v;
  const std::vector<KeyResult>& results = storm.results();
  v.keys = static_cast<int>(results.size());
  for (int i = 0; i < v.keys; ++i) {
    const KeyResult& k = results[static_cast<size_t>(i)];
    const auto calls_at = upstream.calls.find(k.key);
    const int calls = calls_at == upstream.calls.end() ? 0 : calls_at->second;
    const auto charges_at = upstream.charges.find(k.key);
    const std::vector<std::string> charges =
        charges_at == upstream.charges.end() ? std::vector<std::string>{} : charges_at->second;
    const e2e::Response again = replay(i);
    const bool replayed = again.status == 201 && again.Header("Idempotent-Replayed") == "true";
    const std::string recorded = replayed ? ChargeId(again.body) : "";
    bool bad = false;
    const auto count = [&bad](int& field, bool when) {
      if (when) ++field;
      bad = bad || when;
    };
    count(v.ran_twice, calls > 1);
    const ClientResult& a = k.clients[0];
    const ClientResult& b = k.clients[1];
    const auto answered = [](const ClientResult& c) { return c.final && c.status == 201; };
    count(v.unanswered, !answered(a) || !answered(b));
    count(v.two_answers, answered(a) && answered(b) && a.charge_id != b.charge_id);
    count(v.unrecorded, !replayed);
    count(v.recorded_not_last, replayed && (charges.empty() || recorded != charges.back()));
    count(v.answer_not_recorded, replayed && ((answered(a) && a.charge_id != recorded) ||
                                              (answered(b) && b.charge_id != recorded)));
    if (bad && v.examples.size() < 12) {
      std::string executed;
      for (const std::string& c : charges) executed += (executed.empty() ? "" : ",") + c;
      v.examples.push_back(
          k.key + ": client A " + Describe(a) + "; client B " + Describe(b) + "; upstream ran it " +
          std::to_string(calls) + "x [" + executed + "]; recorded " +
          (replayed ? recorded : "nothing (replay got " + std::to_string(again.status) + ")"));
    }
  }
  return v;
}

}  // namespace idem::faults
