#!/usr/bin/env python3
"""Runs the Python examples against a real PostgreSQL server (the CTest "postgres" fixture's):
`idem keys migrate` installs idem's SQL in a fresh schema; charges_service.py then gets concurrent
duplicates (one charge, every answer the same), a reused key (422), an invalid amount (422,
recorded and replayed), a bad key (400); its fingerprint agrees with `idem fingerprint`; its
records are ordinary ones to `idem keys show`; and two lease_worker.py processes paying the same
payouts through a slow provider call it once per payout.

Usage: test_example.py --idem PATH/TO/idem --fixture-dir BUILD/pg-fixture
"""
import argparse
import concurrent.futures
import http.client
import http.server
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
import uuid

import psycopg

HERE = os.path.dirname(os.path.abspath(__file__))
BODY = '{"amount":4200,"currency":"eur"}'


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def post(port, key, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/charges", body=body,
                 headers={"Idempotency-Key": key, "Content-Type": "application/json"})
    r = conn.getresponse()
    answer = (r.status, r.getheader("Idempotent-Replayed"), r.read().decode())
    conn.close()
    return answer


def stats(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/stats")
    return json.loads(conn.getresponse().read())["charges"]


class Provider(http.server.BaseHTTPRequestHandler):
    """A slow payment provider: 300 ms per payout; counts the payouts it made."""
    calls = []
    lock = threading.Lock()

    def do_POST(self):
        with self.lock:
            self.calls.append(self.path)
        time.sleep(0.3)  # the provider's slowness, the reason for lease mode; not a synchronisation
        body = json.dumps({"payout": self.path.rsplit("/", 1)[1]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_charges(idem, store, python):
    service = subprocess.Popen([python, os.path.join(HERE, "charges_service.py"), "--store", store],
                               stdout=subprocess.PIPE, text=True)
    try:
        line = service.stdout.readline()
        check(line.startswith("listening on "), f"charges_service.py did not start: {line!r}")
        port = int(line.rsplit(":", 1)[1])

        spec = importlib.util.spec_from_file_location("charges_service",
                                                      os.path.join(HERE, "charges_service.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        printed = subprocess.run([idem, "fingerprint", "--method", "POST", "--target", "/charges",
                                  "--body", '{ "currency": "eur", "amount": 4200 }'],
                                 check=True, capture_output=True, text=True).stdout.strip()
        check(printed == module.fingerprint("POST", "/charges", BODY.encode()),
              f"idem fingerprint printed {printed}, the example computes another")

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _: post(port, "order-1", BODY), range(8)))
        check(all(a[0] == 201 for a in answers), f"duplicates: {answers}")
        check(len({a[2] for a in answers}) == 1, f"duplicates got different answers: {answers}")
        check(sum(a[1] is None for a in answers) == 1, f"not exactly one first answer: {answers}")
        check(stats(port) == 1, "concurrent duplicates charged more than once")

        status, _, _ = post(port, "order-1", '{"amount":1,"currency":"eur"}')
        check(status == 422, f"a reused key gave {status}")
        first = post(port, "order-2", '{"amount":-5,"currency":"eur"}')
        again = post(port, "order-2", '{"amount":-5,"currency":"eur"}')
        check(first[0] == 422 and again == (422, "true", first[2]), f"declined: {first} {again}")
        status, _, body = post(port, "a b", BODY)
        check(status == 400 and "visible ASCII" in body, f"a bad key gave {status} {body}")
        check(stats(port) == 1, "a refused request charged")

        shown = subprocess.run([idem, "keys", "show", "--store", store, "order-1",
                                "--format", "json"], check=True, capture_output=True,
                               text=True).stdout
        check('"state":"completed"' in shown.replace(" ", ""), f"idem keys show: {shown}")
    finally:
        service.terminate()
        service.wait(timeout=10)


def test_lease_worker(store, python):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    provider = f"http://127.0.0.1:{server.server_address[1]}/payouts"
    worker = [python, os.path.join(HERE, "lease_worker.py"), "--store", store,
              "--provider", provider, "p1", "p2"]
    try:
        runs = [subprocess.Popen(worker, stdout=subprocess.PIPE, text=True) for _ in range(2)]
        outputs = [r.communicate(timeout=60)[0].split("\n") for r in runs]
        check(all(r.returncode == 0 for r in runs), "a lease worker failed")
        lines = [line for out in outputs for line in out if line]
        for payout in ("p1", "p2"):
            decisions = sorted(line.split()[1] for line in lines if line.split()[0] == payout)
            check(decisions.count("run") == 1, f"payout {payout}: {decisions}")
        check(sorted(Provider.calls) == ["/payouts/p1", "/payouts/p2"],
              f"the provider was called {Provider.calls}")
        replayed = subprocess.run(worker, check=True, capture_output=True, text=True).stdout
        check(replayed.split("\n")[0] == 'p1 replay 200 {"payout": "p1"}', f"replay: {replayed}")
        check(len(Provider.calls) == 2, "a replay called the provider")
    finally:
        server.shutdown()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--idem", required=True)
    parser.add_argument("--fixture-dir", required=True)
    args = parser.parse_args()
    fixture_dir = os.environ.get("IDEM_PG_FIXTURE_DIR") or args.fixture_dir
    with open(os.path.join(fixture_dir, "uri")) as f:
        server = f.read().strip()
    schema = "sql_example_" + uuid.uuid4().hex[:12]
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    store = server + ("&" if "?" in server else "?") + "options=-csearch_path%3D" + schema
    migrated = subprocess.run([args.idem, "keys", "migrate", "--store", store],
                              capture_output=True, text=True)
    check(migrated.returncode == 0 and "idem.begin" in migrated.stdout,
          f"idem keys migrate: {migrated.returncode} {migrated.stdout} {migrated.stderr}")
    test_charges(args.idem, store, sys.executable)
    test_lease_worker(store, sys.executable)
    print("python examples: all checks passed")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
