#include "gateway/recovery_note.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "gateway/forward.h"
#include "idem/retry/deadline.h"

namespace idem::gateway {
namespace {

constexpr std::string_view kVersion = "1";
constexpr size_t kFixedFields = 4;  // :idem-note, :method, :target, :attempts

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

}  // namespace

RecoveryNote NoteOf(const http::request<http::string_body>& request) {
  RecoveryNote note{.method = std::string(request.method_string()),
                    .target = std::string(request.target()),
                    .body = request.body()};
  for (Header& h : EndToEndHeaders(request.base())) {
    // Set again at each forward: Host by the upstream connection, the deadline by the call.
    if (EqualsIgnoreCase(h.name, "Host") || EqualsIgnoreCase(h.name, retry::kDeadlineHeader))
      continue;
    note.headers.push_back(std::move(h));
  }
  return note;
}

RecoveryNote StoredNoteOf(const http::request<http::string_body>& request, const Route& route) {
  RecoveryNote note = NoteOf(request);
  std::erase_if(note.headers, [&](const Header& h) {
    return IsCredentialField(h.name) &&
           std::none_of(route.recover_credentials.begin(), route.recover_credentials.end(),
                        [&](const std::string& kept) { return EqualsIgnoreCase(kept, h.name); });
  });
  return note;
}

StoredResponse EncodeNote(const RecoveryNote& note) {
  StoredResponse stored{.status = kRecoveryNoteStatus, .body = note.body};
  stored.headers.reserve(kFixedFields + note.headers.size());
  stored.headers.push_back({":idem-note", std::string(kVersion)});
  stored.headers.push_back({":method", note.method});
  stored.headers.push_back({":target", note.target});
  stored.headers.push_back({":attempts", std::to_string(note.attempts)});
  stored.headers.insert(stored.headers.end(), note.headers.begin(), note.headers.end());
  return stored;
}

std::optional<RecoveryNote> DecodeNote(const StoredResponse& stored) {
  const std::vector<Header>& h = stored.headers;
  if (stored.status != kRecoveryNoteStatus || h.size() < kFixedFields ||
      h[0].name != ":idem-note" || h[0].value != kVersion || h[1].name != ":method" ||
      h[2].name != ":target" || h[3].name != ":attempts")
    return std::nullopt;
  RecoveryNote note{.method = h[1].value, .target = h[2].value, .body = stored.body};
  const std::string& n = h[3].value;
  if (std::from_chars(n.data(), n.data() + n.size(), note.attempts).ec != std::errc() ||
      note.method.empty() || note.target.empty())
    return std::nullopt;
  note.headers.assign(h.begin() + kFixedFields, h.end());
  return note;
}

http::request<http::string_body> RequestOf(const RecoveryNote& note) {
  http::request<http::string_body> request;
  request.method_string(note.method);
  request.target(note.target);
  request.version(11);
  for (const Header& h : note.headers) request.insert(h.name, h.value);
  request.body() = note.body;
  request.prepare_payload();
  return request;
}

}  // namespace idem::gateway
