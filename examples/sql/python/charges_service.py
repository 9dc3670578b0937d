#!/usr/bin/env python3
"""charges_service: a small charges API whose POST /charges charges once per Idempotency-Key,
however often it is retried, with idem's SQL functions inside the service's own PostgreSQL
transaction (docs/sql.md): idem.begin claims the key, the charge is inserted, idem.finish records
the answer, and one COMMIT makes all three durable together. A retry replays the recorded answer;
a concurrent duplicate waits for the first and then replays it.

    POST /charges   {"amount": 4200, "currency": "eur"} with Idempotency-Key: KEY
                    201 {"id": N, "amount": ..., "currency": ...}; a retry replays it
                    (Idempotent-Replayed: true); 422 for an amount that is not a positive
                    integer (recorded and replayed too), 422 for the key reused with another
                    request, 409 while a lease-mode holder has the key, 400 for a bad key
    GET  /stats     {"charges": N}

Usage: charges_service.py --store postgresql://... [--listen 127.0.0.1:0]
Prints "listening on HOST:PORT" once it accepts requests. Needs psycopg 3 (Debian: python3-psycopg)
and a database where `idem keys migrate --store URI` ran (or share/idem/sql-functions.sql).
"""
import argparse
import hashlib
import json
import queue
import struct
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg
from psycopg.types.json import Jsonb

SCHEMA = """CREATE TABLE IF NOT EXISTS charges (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  idempotency_key text   NOT NULL,
  amount          bigint NOT NULL,
  currency        text   NOT NULL)"""


def fingerprint(method: str, target: str, body: bytes) -> str:
    """The fingerprint idem serve computes for the request (`idem fingerprint` prints it): SHA-256
    over length-prefixed fields. A JSON body is canonicalised first (RFC 8785); json.dumps with
    sorted keys writes the same text for objects of strings, integers, booleans and null, which is
    what this API takes. For bodies with fractional numbers ask `idem fingerprint` instead."""
    h = hashlib.sha256()

    def field(data: bytes) -> None:
        h.update(struct.pack(">Q", len(data)))
        h.update(data)

    field(b"idem-fingerprint-v1")
    field(method.encode())
    field(target.encode())
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":"),
                               ensure_ascii=False).encode()
        field(b"json")
        field(canonical)
    except ValueError:
        field(b"raw")
        field(body)
    h.update(struct.pack(">Q", 0))  # no headers are part of it
    return h.hexdigest()


def problem(status: int, title: str, detail: str):
    body = json.dumps({"type": "about:blank", "title": title, "status": status,
                       "detail": detail}).encode()
    return status, {"Content-Type": "application/problem+json"}, body


def charge(conn, key: str, fp: str, request: dict):
    """One attempt, in one transaction. Returns (status, headers, body, replayed)."""
    with conn.transaction():
        decision, status, headers, body = conn.execute(
            "SELECT decision, status, headers, body FROM idem.begin(%s, %s)", (key, fp)).fetchone()
        if decision == "replay":
            return status, headers, bytes(body), True
        if decision == "mismatch":
            return (*problem(422, "Idempotency-Key reused",
                             "this key was used for another request; use a new key"), False)
        if decision == "in_progress":
            return (*problem(409, "Request in progress",
                             "a request with this key is still being processed; retry later"),
                    False)
        # decision == "run": this transaction holds the key until COMMIT or ROLLBACK.
        amount, currency = request.get("amount"), request.get("currency")
        if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
            # A deterministic failure: recorded like a success, so every retry gets it again.
            status, headers, body = problem(422, "Invalid amount",
                                            "amount must be a positive integer (minor units)")
        else:
            charge_id = conn.execute(
                "INSERT INTO charges (idempotency_key, amount, currency) VALUES (%s, %s, %s) "
                "RETURNING id", (key, amount, str(currency))).fetchone()[0]
            status, headers = 201, {"Content-Type": "application/json"}
            body = json.dumps({"id": charge_id, "amount": amount,
                               "currency": str(currency)}).encode()
        conn.execute("SELECT idem.finish(%s, %s, %s, %s)", (key, status, Jsonb(headers), body))
        return status, headers, body, False
    # An exception (a lost connection, a deadlock) rolled everything back, the key included: the
    # client's retry runs the charge afresh.


class Handler(BaseHTTPRequestHandler):
    pool: "queue.Queue[psycopg.Connection]"

    def answer(self, status, headers, body, replayed=False):
        self.send_response(status)
        for name, value in headers.items():
            for v in value if isinstance(value, list) else [value]:
                self.send_header(name, v)
        if replayed:
            self.send_header("Idempotent-Replayed", "true")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path != "/stats":
            return self.answer(*problem(404, "Not found", "POST /charges, GET /stats"))
        conn = self.pool.get()
        try:
            n = conn.execute("SELECT count(*) FROM charges").fetchone()[0]
        finally:
            self.pool.put(conn)
        self.answer(200, {"Content-Type": "application/json"}, json.dumps({"charges": n}).encode())

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/charges":
            return self.answer(*problem(404, "Not found", "POST /charges, GET /stats"))
        key = self.headers.get("Idempotency-Key", "").strip().strip('"')
        try:
            request = json.loads(raw)
            if not isinstance(request, dict):
                raise ValueError
        except ValueError:
            return self.answer(*problem(400, "Bad body", "send a JSON object"))
        conn = self.pool.get()
        try:
            self.answer(*charge(conn, key, fingerprint("POST", self.path, raw), request))
        except psycopg.Error as e:
            if e.sqlstate and e.sqlstate.startswith("22"):  # idem's bad-input errors name the rule
                return self.answer(*problem(400, "Bad Idempotency-Key", e.diag.message_primary))
            self.answer(*problem(503, "Try again", "the database is unavailable"))
        finally:
            if conn.broken:
                conn = psycopg.connect(self.server.store, autocommit=True)
            self.pool.put(conn)

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="postgresql://... (idem's SQL installed)")
    parser.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT (0: any free port)")
    parser.add_argument("--connections", type=int, default=8)
    args = parser.parse_args()
    with psycopg.connect(args.store, autocommit=True) as setup:
        setup.execute(SCHEMA)
    Handler.pool = queue.Queue()
    for _ in range(args.connections):
        # autocommit: each `with conn.transaction()` is then a BEGIN ... COMMIT of its own.
        Handler.pool.put(psycopg.connect(args.store, autocommit=True))
    host, port = args.listen.rsplit(":", 1)
    server = ThreadingHTTPServer((host, int(port)), Handler)
    server.store = args.store
    print(f"listening on {server.server_address[0]}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
