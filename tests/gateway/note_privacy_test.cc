// End-to-end (issue 37, item 9): what a recovering route's note leaves in a SQLite store's files.
// A claim on a route with `recover` keeps the request, credentials included, until its outcome
// replaces it. Under umask 022 the database, its -wal and its -shm are the owner's alone (0600);
// once the outcome was answered, no byte of the request's Authorization value remains in either
// file, also when the gateway is SIGKILLed right after the answer (no clean shutdown, no
// checkpoint at close). SQLite only: docs/postgres-store.md and docs/distributed-store.md say
// what the other stores keep.
#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <thread>

#include "gateway_fixture.h"

namespace idem::e2e {
namespace {

class NotePrivacyE2E : public GatewayFixture {
 protected:
  // Whether `bytes` occur in the database file or its WAL.
  bool InStoreFiles(const std::string& bytes) {
    for (const char* suffix : {"", "-wal"}) {
      if (ReadFile(dir_ + "/idem.db" + suffix).find(bytes) != std::string::npos) return true;
    }
    return false;
  }

  static unsigned ModeOf(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return 01000;  // not a mode: the file is missing
    return st.st_mode & 0777;
  }
};

TEST_F(NotePrivacyE2E, StoreFilesAreOwnerOnlyAndNoNoteOutlivesItsAnsweredOutcomeEvenAfterSigkill) {
  const std::string config = Config(R"(
[[route]]
path_prefix = "/charges"
recover = "resend"
recover_credentials = ["Authorization"]

[[route]]
path_prefix = "/pay"
recover = "resend"
)");
  const mode_t before = ::umask(022);
  StartGateway({"--config", config});
  ::umask(before);

  // A route that names no credential keeps none in its note: the note is there (its other
  // fields are), its Authorization and Cookie are not.
  const std::string marker = "note-marker-4711", bearer = "Bearer unnamed-secret-4712",
                    cookie = "session=unnamed-secret-4713";
  Response held;
  std::thread client([&] {
    held = Post("note-pay", kBody,
                {{"Authorization", bearer},
                 {"Cookie", cookie},
                 {"X-Note-Marker", marker},
                 {"X-Charges-Hold", "p"}},
                "/pay");
  });
  ASSERT_TRUE(Eventually([&] { return Stat("held") == 1; }));
  EXPECT_TRUE(InStoreFiles(marker));
  EXPECT_FALSE(InStoreFiles(bearer));
  EXPECT_FALSE(InStoreFiles(cookie));
  Send(charges_port_, "POST", "/release/p");
  client.join();
  ASSERT_EQ(held.status, 201) << held.body;

  // A route that names Authorization keeps it while the request runs: the grep sees it.
  const std::string held_secret = "Bearer held-note-secret-4714";
  client = std::thread([&] {
    held = Post("note-held", kBody, {{"Authorization", held_secret}, {"X-Charges-Hold", "n"}});
  });
  ASSERT_TRUE(Eventually([&] { return Stat("held") == 1; }));
  EXPECT_TRUE(InStoreFiles(held_secret));
  Send(charges_port_, "POST", "/release/n");
  client.join();
  ASSERT_EQ(held.status, 201) << held.body;

  // Another request answered, then the gateway killed at once.
  const std::string secret = "Bearer answered-note-secret-4715";
  ASSERT_EQ(Post("note-answered", kBody, {{"Authorization", secret}}).status, 201);
  gateway_->Signal(SIGKILL);
  ASSERT_EQ(gateway_->Wait(std::chrono::seconds(10)), 128 + SIGKILL);

  for (const char* suffix : {"", "-wal", "-shm"})
    EXPECT_EQ(ModeOf(dir_ + "/idem.db" + suffix), 0600u) << "idem.db" << suffix;
  for (const std::string& gone : {marker, bearer, cookie, held_secret, secret})
    EXPECT_FALSE(InStoreFiles(gone)) << gone;
  EXPECT_EQ(Stat("calls"), 3);
}

}  // namespace
}  // namespace idem::e2e
