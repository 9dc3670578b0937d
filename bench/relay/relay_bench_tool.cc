// Helpers for bench/relay/run.sh (not a test):
//   relay_bench_tool fill STORE N AGGREGATES BYTES   N messages in transactions of 1000
//   relay_bench_tool trickle STORE N RATE            N messages, one transaction each, RATE per s
//   relay_bench_tool latency STORE                   p50 p99 max of sent_ms - created_ms, in ms
//   relay_bench_tool stream NATS_URL NAME SUBJECT    (re)creates a JetStream stream (file storage)
//   relay_bench_tool stream-count NATS_URL NAME      messages in the stream
#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "idem/outbox.h"
#include "idem/store.h"

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "relay_bench_tool: %s\n", what.c_str());
  return 1;
}

std::unique_ptr<idem::Store> Open(const std::string& uri) {
  auto store = idem::OpenStore(uri);
  if (!store.ok()) {
    std::fprintf(stderr, "relay_bench_tool: %s\n", store.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*store);
}

// Adds messages [from, to) in one transaction.
bool AddMessages(idem::Store& store, int64_t from, int64_t to, int64_t aggregates,
                 const std::string& payload) {
  auto tx = store.Begin();
  if (!tx.ok()) return false;
  for (int64_t i = from; i < to; ++i) {
    auto id =
        idem::AddOutboxMessage(**tx, {.topic = "bench.created",
                                      .aggregate_key = "agg-" + std::to_string(i % aggregates),
                                      .payload = payload});
    if (!id.ok()) return false;
  }
  return (*tx)->Commit().ok();
}

int Fill(const std::string& uri, int64_t n, int64_t aggregates, size_t bytes) {
  auto store = Open(uri);
  const std::string payload = "{\"pad\":\"" + std::string(bytes > 12 ? bytes - 10 : 1, 'x') + "\"}";
  for (int64_t from = 0; from < n; from += 1000) {
    if (!AddMessages(*store, from, std::min(n, from + 1000), aggregates, payload)) {
      return Fail("fill failed");
    }
  }
  return 0;
}

int Trickle(const std::string& uri, int64_t n, double rate) {
  auto store = Open(uri);
  const auto step = std::chrono::duration<double>(1.0 / rate);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) {
    std::this_thread::sleep_until(start + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              step * static_cast<double>(i)));
    if (!AddMessages(*store, i, i + 1, 100, "{}")) return Fail("trickle failed");
  }
  return 0;
}

int Latency(const std::string& uri) {
  auto store = Open(uri);
  auto tx = store->Begin();
  if (!tx.ok()) return Fail(tx.status().ToString());
  auto rows = (*tx)->Query("SELECT sent_ms - created_ms FROM idem_outbox WHERE state = 'sent'");
  if (!rows.ok()) return Fail(rows.status().ToString());
  std::vector<int64_t> ms;
  for (const idem::SqlRow& row : *rows) ms.push_back(std::get<int64_t>(row.at(0)));
  if (ms.empty()) return Fail("no sent message");
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) {
    return ms[std::min(ms.size() - 1, static_cast<size_t>(q * ms.size()))];
  };
  std::printf("%lld %lld %lld %zu\n", static_cast<long long>(at(0.50)),
              static_cast<long long>(at(0.99)), static_cast<long long>(ms.back()), ms.size());
  return 0;
}

struct Nats {
  natsConnection* conn = nullptr;
  jsCtx* js = nullptr;
  ~Nats() {
    jsCtx_Destroy(js);
    natsConnection_Destroy(conn);
  }
};

int Stream(const std::string& url, const std::string& name, const std::string& subject,
           bool count_only) {
  Nats nats;
  if (natsConnection_ConnectTo(&nats.conn, url.c_str()) != NATS_OK ||
      natsConnection_JetStream(&nats.js, nats.conn, nullptr) != NATS_OK) {
    return Fail("cannot connect to " + url);
  }
  if (count_only) {
    jsStreamInfo* info = nullptr;
    if (js_GetStreamInfo(&info, nats.js, name.c_str(), nullptr, nullptr) != NATS_OK) {
      return Fail("no stream " + name);
    }
    std::printf("%llu\n", static_cast<unsigned long long>(info->State.Msgs));
    jsStreamInfo_Destroy(info);
    return 0;
  }
  js_DeleteStream(nats.js, name.c_str(), nullptr, nullptr);
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  config.Name = name.c_str();
  const char* subjects[] = {subject.c_str()};
  config.Subjects = subjects;
  config.SubjectsLen = 1;
  config.Storage = js_FileStorage;
  jsStreamInfo* info = nullptr;
  if (js_AddStream(&info, nats.js, &config, nullptr, nullptr) != NATS_OK) {
    return Fail("cannot create stream " + name);
  }
  jsStreamInfo_Destroy(info);
  return 0;
}

int Run(const std::vector<std::string>& a) {
  if (a.size() == 5 && a[0] == "fill") {
    return Fill(a[1], std::stoll(a[2]), std::stoll(a[3]), std::stoul(a[4]));
  }
  if (a.size() == 4 && a[0] == "trickle") return Trickle(a[1], std::stoll(a[2]), std::stod(a[3]));
  if (a.size() == 2 && a[0] == "latency") return Latency(a[1]);
  if (a.size() == 4 && a[0] == "stream") return Stream(a[1], a[2], a[3], false);
  if (a.size() == 3 && a[0] == "stream-count") return Stream(a[1], a[2], "", true);
  return Fail("usage: see the comment at the top of bench/relay/relay_bench_tool.cc");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {  // a number that does not parse
    return Fail(e.what());
  }
}
