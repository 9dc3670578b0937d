"""The storm's upstream: a counting HTTP service that records every effect it runs.

Each gateway forwards to its own prefix (/g1, /g2, ...; /final for the checker's replays), so every
arrival names the gateway that sent it. A request names its logical key in X-Storm-Key (the
gateway forwards end-to-end headers, the completer re-sends the stored ones) and asks for a
behaviour in X-Storm-Mode:

  ok          run the effect, answer 201 with a JSON body naming the execution
  slow:MS     run the effect, answer after MS milliseconds
  fail        answer 500 without running the effect (a transient failure)
  drop        run the effect, then close the connection without an answer
  huge:BYTES  run the effect, answer 201 with a body of BYTES bytes

POSTs under /resend deduplicate by the key (the upstream a `recover = "resend"` route needs): a
second arrival answers the first effect's answer again without running anything. GET
/gN/by-key/KEY is the status URL of `recover = "status"` routes: 200 with the effect's answer when
it ran, 404 when it did not. POSTs under /final run nothing and answer 503: the checker's replays
must be answered by the store.
"""

import hashlib
import http.server
import json
import os
import signal
import socketserver
import subprocess
import sys
import threading
import time

from history import History, read


def body_digest(body):
    return hashlib.sha256(body).hexdigest()[:16]


class Effects:
    """What ran, per logical key, shared by the handler threads."""

    def __init__(self, history):
        self.history = history
        self.lock = threading.Lock()
        self.next_ex = 1
        # (logical key, request body digest) -> the answer of its last effect: an upstream that
        # deduplicates by key, and a status URL, tell requests of another body under the key apart
        self.answers = {}

    def run(self, key, gw, route, fence, mode, delay_ms, body, dedup, xrid):
        """Runs (or deduplicates) one arrival; returns the answer body, or None for 'fail'."""
        with self.lock:
            if mode == "fail":
                self.history.record("arrival", key=key, gw=gw, route=route, fence=fence,
                                    mode=mode, effect=False, xrid=xrid)
                return None
            if dedup and (key, body_digest(body)) in self.answers:
                answer = self.answers[(key, body_digest(body))]
                self.history.record("arrival", key=key, gw=gw, route=route, fence=fence,
                                    mode=mode, effect=False, dedup=True, xrid=xrid,
                                    answer=body_digest(answer))
                return answer
            ex = self.next_ex
            self.next_ex += 1
            doc = {"ex": ex, "key": key, "gw": gw, "fence": fence,
                   "request": body_digest(body)}
            answer = json.dumps(doc, sort_keys=True).encode()
            if mode == "huge":
                pad = max(0, delay_ms - len(answer) - 16)
                doc["pad"] = "x" * pad
                answer = json.dumps(doc, sort_keys=True).encode()
            self.answers[(key, body_digest(body))] = answer
            self.history.record("exec", key=key, ex=ex, gw=gw, route=route, fence=fence, xrid=xrid,
                                mode=mode, delay_ms=delay_ms if mode == "slow" else 0,
                                size=len(answer), request=body_digest(body),
                                answer=body_digest(answer))
            return answer

    def status(self, key, request):
        with self.lock:
            return self.answers.get((key, request))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "storm-upstream"

    def log_message(self, fmt, *args):  # quiet: the history says what happened
        pass

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))

    def answer(self, status, body, content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def split_path(self):
        parts = self.path.split("?")[0].strip("/").split("/")
        return parts[0], (parts[1] if len(parts) > 1 else "")

    def do_GET(self):
        gw, what = self.split_path()
        key = self.headers.get("X-Storm-Key", "")
        effects = self.server.effects
        if what != "by-key":
            self.answer(404, b'{"storm":"no such path"}')
            return
        answer = effects.status(key, self.headers.get("X-Storm-Body", ""))
        effects.history.record("status_query", key=key, gw=gw, ran=answer is not None)
        if answer is None:
            self.answer(404, b'{"storm":"never ran"}')
        else:
            self.answer(200, answer)

    def do_POST(self):
        body = self.read_body()
        gw, route = self.split_path()
        effects = self.server.effects
        key = self.headers.get("X-Storm-Key", "")
        if gw == "final":
            effects.history.record("final_forward", key=key, route=route)
            self.answer(503, b'{"storm":"not recorded"}')
            return
        mode, _, arg = self.headers.get("X-Storm-Mode", "ok").partition(":")
        number = int(arg) if arg.isdigit() else 0
        fence = self.headers.get("Idempotency-Fence")
        answer = effects.run(key, gw, route, fence, mode, number, body,
                             dedup=(route == "resend"), xrid=self.headers.get("X-Request-Id"))
        if answer is None:
            self.answer(500, b'{"storm":"transient failure"}')
            return
        if mode == "drop":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if mode == "slow":
            time.sleep(number / 1000.0)
        self.answer(201, answer)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def handle_error(self, request, client_address):
        pass  # a gateway that hung up (timeout, kill): the history has the arrival already


class AbsoluteHistory(History):
    """The upstream's own history file: `t` on the machine's monotonic clock (the storm maps it
    onto the run's clock when it merges the file)."""

    def now(self):
        return time.monotonic()


class Upstream:
    """The upstream as a process of its own, as a real service is: the storm's clients never
    hold up its answers (one interpreter lock each)."""

    def __init__(self, work):
        self.history_path = os.path.join(work, "upstream.jsonl")
        port_file = os.path.join(work, "upstream.port")
        self.proc = subprocess.Popen([sys.executable, "-B", os.path.abspath(__file__),
                                      self.history_path, port_file],
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not os.path.exists(port_file) or not open(port_file).read().endswith("\n"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the storm's upstream did not start")
            time.sleep(0.02)
        self.port = int(open(port_file).read())

    def stop(self):
        self.proc.terminate()
        self.proc.wait()

    def records(self, mono0):
        """The upstream's records on the run's clock (`mono0`: the run's monotonic start)."""
        out = []
        for r in read(self.history_path):
            r["t"] = round(r["t"] - mono0, 4)
            out.append(r)
        return out


def main(history_path, port_file):
    history = AbsoluteHistory(history_path)
    server = Server(("127.0.0.1", 0), Handler)
    server.effects = Effects(history)
    signal.signal(signal.SIGTERM, lambda *_: (history.close(), os._exit(0)))
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
