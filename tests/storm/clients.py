"""Clients as the world sends them: several per key, at once and later, honouring or ignoring
Retry-After, re-sending after drops, timeouts and 5xx, with fresh, repeated or shared
X-Request-Ids, some with another body under the same key. Every attempt and its answer go to the
history."""

import hashlib
import http.client
import json
import random
import threading
import time

from plan import KeyPlan, mode_header, next_mode

# Answers after which a client stops: what the key's answer is, or a refusal it cannot retry.
RETRYABLE_TYPES = {"key-in-flight", "store-unavailable", "outcome-not-recorded",
                   "upstream-unreachable", "upstream-bad-response", "upstream-timeout"}


def digest(data):
    return hashlib.sha256(data).hexdigest()[:16]


def problem_type(body):
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    if isinstance(doc, dict) and isinstance(doc.get("type"), str):
        return doc["type"].rsplit("/", 1)[-1]
    return None


def problem_detail(body, ptype):
    """A store refusal's detail, which the checker reads for the store's own words."""
    if ptype not in ("store-unavailable", "outcome-not-recorded"):
        return {}
    try:
        doc = json.loads(body)
    except ValueError:
        return {}
    detail = doc.get("detail") if isinstance(doc, dict) else None
    return {"detail": detail[:300]} if isinstance(detail, str) else {}


def upstream_fields(body):
    """The execution an answer came from (the upstream's JSON), if it is one."""
    if len(body) > 4096 and not body.startswith(b'{"ex"'):
        return {}
    try:
        doc = json.loads(body)
    except ValueError:
        return {}
    if isinstance(doc, dict) and "ex" in doc:
        return {"ex": doc["ex"], "body_key": doc.get("key"), "request": doc.get("request")}
    return {}


def post(port, path, body, headers, timeout, host="127.0.0.1"):
    """One request on a fresh connection: (status, headers, body) or an error string."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("POST", path, body=body, headers=headers)
        answer = conn.getresponse()
        data = answer.read()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, data
    except (OSError, http.client.HTTPException) as error:
        return None, {}, type(error).__name__
    finally:
        conn.close()


def request_headers(plan, key, xrid, mode, body):
    # X-Storm-Body names the body for the status URL (the completer's GET carries the stored
    # request's headers, not its body).
    headers = {"Content-Type": "application/json", "X-Storm-Key": key.name,
               "X-Storm-Mode": mode, "X-Request-Id": xrid, "X-Storm-Body": digest(body)}
    if key.route != "ptr":
        headers["Idempotency-Key"] = key.key
    if key.tenant is not None:
        if plan.tenants == "header":
            headers["X-Tenant"] = key.tenant
        else:
            headers["Authorization"] = "Bearer storm-" + key.tenant
    return headers


class Client:
    def __init__(self, run, key, index, spec, gateways, history, deadline):
        self.run_plan = run
        self.key = key
        self.index = index
        self.spec = spec
        self.gateways = gateways
        self.history = history
        self.deadline = deadline
        self.rng = random.Random(spec["seed"])

    def xrid(self, attempt):
        policy = self.spec["xrid"]
        if policy == "shared":
            return "rid-" + self.key.name
        if policy == "fixed":
            return "rid-%s-c%d" % (self.key.name, self.index)
        return "rid-%s-c%d-a%d-%08x" % (self.key.name, self.index, attempt,
                                         self.rng.randrange(1 << 32))

    def run(self):
        time.sleep(self.spec["start"])
        body = json.dumps(self.key.body(self.spec["changed_body"]), sort_keys=True).encode()
        gw = self.spec["first_gw"]
        mode = self.spec["first_mode"]
        attempt = 0
        while self.history.now() < self.deadline:
            attempt += 1
            if self.spec["gateway"] == "random" and attempt > 1:
                gw = self.rng.randrange(len(self.gateways))
            header = mode_header(mode, self.rng, self.run_plan.upstream_timeout)
            xrid = self.xrid(attempt)
            self.history.record("send", key=self.key.name, client=self.index, attempt=attempt,
                                gw=self.gateways[gw].name, xrid=xrid, request=digest(body),
                                mode=header)
            status, headers, data = post(self.gateways[gw].port, "/%s/charge" % self.key.route,
                                         body, request_headers(self.run_plan, self.key, xrid,
                                                               header, body),
                                         self.spec["timeout"], host=self.gateways[gw].host)
            if status is None:
                self.history.record("answer", key=self.key.name, client=self.index,
                                    attempt=attempt, status=None, error=data)
                if data == "ConnectionRefusedError":
                    gw = (gw + 1) % len(self.gateways)
                time.sleep(self.rng.uniform(0.1, 0.4))
                mode = next_mode(self.rng)
                continue
            ptype = problem_type(data) if headers.get("content-type", "").startswith(
                "application/problem+json") else None
            retry_after = headers.get("retry-after")
            self.history.record("answer", key=self.key.name, client=self.index,
                                attempt=attempt, status=status, type=ptype, body=digest(data),
                                size=len(data), replayed=headers.get("idempotent-replayed"),
                                retry_after=retry_after, sent=digest(body),
                                **upstream_fields(data), **problem_detail(data, ptype))
            if not self.retryable(status, ptype):
                return
            wait = self.rng.uniform(0.1, 0.5)
            if retry_after is not None and self.spec["honour_retry_after"]:
                try:
                    wait = min(float(retry_after), self.run_plan.lease + 1)
                except ValueError:
                    pass
            time.sleep(wait)
            mode = next_mode(self.rng)
        self.history.record("gave_up", key=self.key.name, client=self.index, attempts=attempt)

    @staticmethod
    def retryable(status, ptype):
        if ptype in RETRYABLE_TYPES:
            return True
        if ptype is None and status >= 500:
            return True  # the upstream's own transient answer
        return status in (408, 425, 429)


class Load:
    """Worker threads that take keys in order until the run's time is up; each key's clients run
    at once (each after its own start offset)."""

    def __init__(self, run, gateways, history):
        self.run_plan = run
        self.gateways = gateways
        self.history = history
        self.next_index = 0
        self.lock = threading.Lock()
        self.keys = []
        self.threads = []

    def start(self):
        for _ in range(self.run_plan.workers):
            t = threading.Thread(target=self.work, daemon=True)
            t.start()
            self.threads.append(t)

    def join(self):
        for t in self.threads:
            t.join()

    def work(self):
        deadline = self.run_plan.seconds + self.run_plan.settle_seconds()
        while self.history.now() < self.run_plan.seconds:
            with self.lock:
                index = self.next_index
                self.next_index += 1
            key = KeyPlan(self.run_plan, index)
            with self.lock:
                self.keys.append(key)
            route = self.run_plan.routes[key.route]
            bodies = [digest(json.dumps(key.body(c), sort_keys=True).encode())
                      for c in (False, True)]
            self.history.record("key", key=key.name, route=key.route, recover=route["recover"],
                                fence_header=route["fence_header"], key_string=key.key,
                                tenant=key.tenant, bodies=bodies, clients=len(key.clients))
            clients = [threading.Thread(target=Client(self.run_plan, key, i, spec,
                                                      self.gateways, self.history,
                                                      deadline).run, daemon=True)
                       for i, spec in enumerate(key.clients)]
            for c in clients:
                c.start()
            for c in clients:
                c.join()
