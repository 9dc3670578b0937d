#!/usr/bin/env python3
"""lease_worker: pays out each payout id given on the command line exactly once through a slow
external payment provider, with idem's lease mode in SQL (docs/sql.md). The effect is outside the
database, so no transaction can cover it: each step is its own short transaction.

  idem.acquire   claims the key for a lease (run, with a fence), or says replay / in_progress /
                 mismatch; a holder that died is taken over once its lease lapses
  idem.heartbeat extends the lease while the provider is slow (here from a thread)
  idem.complete  records the provider's answer; idem.release gives the key up after a transient
                 failure, so the next attempt runs again

Every call after acquire carries the fence; a worker whose lease lapsed and was taken over gets
SQLSTATE IDEM1 and must not record anything.

Usage: lease_worker.py --store postgresql://... --provider http://127.0.0.1:PORT/payouts ID...
Prints one line per payout: "ID run|replay|in_progress|mismatch|lost STATUS BODY".
"""
import argparse
import hashlib
import sys
import threading
import urllib.error
import urllib.request

import psycopg
from psycopg.types.json import Jsonb

LEASE = "10 seconds"


def heartbeats(store: str, key: str, fence: int, stop: threading.Event) -> None:
    with psycopg.connect(store, autocommit=True) as conn:
        while not stop.wait(3.0):  # well inside the lease
            try:
                conn.execute("SELECT idem.heartbeat(%s, %s, %s)", (key, fence, LEASE))
            except psycopg.Error:
                return  # lost the key (IDEM1) or the database: complete will say which


def pay_out(store: str, provider: str, payout_id: str) -> str:
    key = "payout-" + payout_id
    fp = hashlib.sha256(f"payout {payout_id}".encode()).hexdigest()
    with psycopg.connect(store, autocommit=True) as conn:
        decision, fence, status, _headers, body = conn.execute(
            "SELECT decision, fence, status, headers, body FROM idem.acquire(%s, %s, %s)",
            (key, fp, LEASE)).fetchone()
        if decision != "run":
            return f"{payout_id} {decision} {status} {bytes(body or b'').decode()}"
        stop = threading.Event()
        beating = threading.Thread(target=heartbeats, args=(store, key, fence, stop))
        beating.start()
        try:
            request = urllib.request.Request(f"{provider}/{payout_id}", method="POST",
                                             headers={"Idempotency-Key": key}, data=b"")
            try:
                with urllib.request.urlopen(request, timeout=60) as r:
                    status, answer = r.status, r.read()
            except urllib.error.HTTPError as e:
                status, answer = e.code, e.read()
            except OSError:
                status, answer = None, b""
        finally:
            stop.set()
            beating.join()
        try:
            if status is None or status >= 500:
                conn.execute("SELECT idem.release(%s, %s)", (key, fence))  # transient: run again
                return f"{payout_id} released 0 provider unavailable"
            conn.execute("SELECT idem.complete(%s, %s, %s, %s, %s)",
                         (key, fence, status, Jsonb({}), answer))
            return f"{payout_id} run {status} {answer.decode()}"
        except psycopg.Error as e:
            if e.sqlstate == "IDEM1":  # the lease lapsed and another worker took the key over
                return f"{payout_id} lost 0 {e.diag.message_primary}"
            raise


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--provider", required=True, help="base URL; POST {provider}/{id}")
    parser.add_argument("ids", nargs="+")
    args = parser.parse_args()
    for payout_id in args.ids:
        print(pay_out(args.store, args.provider, payout_id), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
