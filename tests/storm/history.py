"""The storm's history: one JSON object a line, every request, answer, upstream arrival and fault,
each with `t`, seconds since the run started (one monotonic clock for the whole process)."""

import json
import threading
import time


class History:
    def __init__(self, path):
        self.path = path
        self.file = open(path, "w", encoding="utf-8")
        self.lock = threading.Lock()
        self.t0 = time.monotonic()
        self.wall0 = time.time()

    def restart_clock(self):
        """The schedule's clock starts now (gateways' log times are mapped onto it by wall0)."""
        self.t0 = time.monotonic()
        self.wall0 = time.time()

    def now(self):
        return time.monotonic() - self.t0

    def record(self, ev, **fields):
        fields["ev"] = ev
        fields["t"] = round(self.now(), 4)
        line = json.dumps(fields, sort_keys=True)
        with self.lock:
            self.file.write(line + "\n")
            self.file.flush()
        return fields["t"]

    def close(self):
        with self.lock:
            self.file.close()


def read(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
