// Internal: what a claim of a route with `recover` stores as its note (KeyRecord::response of its
// in_progress record, LeaseWrite::response of the claim), so that any gateway can recover the
// claim once its holder's lease lapsed: the request as forwarded (method, target, end-to-end
// headers, body) and how many recovery attempts it has had. The outcome replaces the note.
//
// Thread-safety: pure functions.
#ifndef IDEM_GATEWAY_RECOVERY_NOTE_H_
#define IDEM_GATEWAY_RECOVERY_NOTE_H_

#include <optional>
#include <string>
#include <vector>

#include "gateway/asio_includes.h"
#include "gateway/gateway_config.h"
#include "idem/record.h"

namespace idem::gateway {

// The status a note is stored under: no HTTP status is 1, so a note is never taken for an answer.
// persisted: never change.
inline constexpr int kRecoveryNoteStatus = 1;

struct RecoveryNote {
  std::string method;
  // As the client sent it (origin form); the upstream's path prefix is added at each forward.
  std::string target;
  // End-to-end, in order; no Host, Content-Length or hop-by-hop fields (set at each forward).
  std::vector<Header> headers;
  std::string body;
  int attempts = 0;  // recovery attempts made so far (0: only the first holder's call)
};

// Returns the note of `request` as the gateway forwards it.
RecoveryNote NoteOf(const http::request<http::string_body>& request);

// Returns the note of `request` as a claim on `route` stores it: NoteOf, less every credential
// field `route` does not name in recover_credentials (the least a re-send needs; docs/gateway.md,
// "What is stored, and for how long").
RecoveryNote StoredNoteOf(const http::request<http::string_body>& request, const Route& route);

// Returns `note` in the stored form: status kRecoveryNoteStatus, the fields ":idem-note" (the
// format's version), ":method", ":target" and ":attempts" first among the headers, the body as is.
// persisted: a new form gets a new version.
StoredResponse EncodeNote(const RecoveryNote& note);

// Returns the note `stored` holds, or nullopt when it holds none (an empty or unknown note).
std::optional<RecoveryNote> DecodeNote(const StoredResponse& stored);

// Returns the request `note` stands for, ready for ForwardBuffered.
http::request<http::string_body> RequestOf(const RecoveryNote& note);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_RECOVERY_NOTE_H_
