"""The processes of a storm run: `idem serve` gateways sharing one store, and the store itself
(a SQLite file, a private PostgreSQL server; the JetStream cluster is nats_store.py), each with
the faults the nemesis may put on it."""

import os
import signal
import socket
import sqlite3
import subprocess
import threading
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def seconds(value):
    return "%dms" % int(value * 1000)


def route_toml(name, route, plan, in_flight=None):
    lines = ["[[route]]", 'path_prefix = "/%s"' % name, 'methods = ["POST"]']
    in_flight = in_flight or route["in_flight"]
    lines.append('in_flight = "%s"' % in_flight)
    if in_flight == "wait":
        lines.append('wait_max = "%s"' % seconds(plan.lease / 2))
    if route["fence_header"]:
        lines.append('fence_header = "Idempotency-Fence"')
    if route["recover"] != "off":
        lines.append('recover = "%s"' % route["recover"])
    if route["recover"] == "status":
        lines.append('status_url = "/by-key/{key}"')
        lines.append("recovered_status = 201")
    if name == "ptr":
        lines.append('key_pointer = "/id"')
    return "\n".join(lines) + "\n"


def config_toml(plan, flip_in_flight=False, recover=True):
    out = ['recover_interval = "%s"' % seconds(plan.recover_interval),
           "recover_attempts = %d" % plan.recover_attempts,
           'drain_timeout = "%s"' % seconds(plan.drain_timeout), ""]
    for name, route in plan.routes.items():
        route = dict(route)
        if not recover:
            route["recover"] = "off"
        in_flight = route["in_flight"]
        if flip_in_flight:
            in_flight = "wait" if in_flight == "conflict" else "conflict"
        out.append(route_toml(name, route, plan, in_flight))
    return "\n".join(out)


class ChildProcess:
    """A process the storm starts and the nemesis signals (a gateway, a library worker): `proc`
    is its subprocess.Popen, None before its first start."""

    proc = None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            self.proc.send_signal(sig)

    def kill(self):
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait()

    def start_while_store_out(self, start_once, wait, pause):
        """Calls `start_once` until it does not raise StoreNotReady (the process exited at start
        because its store is still out or healing from a fault), for `wait` seconds at most."""
        deadline = time.monotonic() + wait
        while True:
            try:
                return start_once()
            except StoreNotReady:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(pause)


class Gateway(ChildProcess):
    def __init__(self, idem, name, plan, store_uri, upstream_port, work, cache_off, recover=True,
                 netns=None):
        self.idem = idem
        self.name = name
        self.plan = plan
        self.store_uri = store_uri
        self.upstream = "http://127.0.0.1:%d/%s" % (upstream_port, name)
        # In a network namespace of its own (netns.py) the gateway listens on the namespace's
        # address; its store and upstream stay at 127.0.0.1, routed to the storm's loopback.
        self.netns = netns
        self.host = netns.address if netns is not None else "127.0.0.1"
        self.port = free_port()
        self.admin = free_port()
        self.config = os.path.join(work, "%s.toml" % name)
        self.log = os.path.join(work, "%s.log" % name)
        self.cache_off = cache_off
        self.proc = None
        self.stopped = False
        self.lock = threading.Lock()
        with open(self.config, "w") as f:
            f.write(config_toml(plan, recover=recover))

    def command(self):
        cmd = [self.idem, "serve", "--listen", "%s:%d" % (self.host, self.port),
               "--admin", "%s:%d" % (self.host, self.admin), "--upstream", self.upstream,
               "--store", self.store_uri, "--config", self.config,
               "--lease", seconds(self.plan.lease),
               "--upstream-timeout", seconds(self.plan.upstream_timeout),
               "--lock-timeout", "1s", "--record-wait", "2s", "--io-threads", "2",
               "--log-level", "debug", "--log-format", "json"]
        if self.plan.tenants == "header":
            cmd += ["--tenant-header", "X-Tenant"]
        if self.cache_off:
            cmd += ["--cache-bytes", "0"]
        return cmd

    def start(self, clock_offset=None, heal_wait=60):
        """Starts the gateway. One that exits at once because its store is still healing from a
        fault (a JetStream quorum electing its leaders again) is started again, for `heal_wait`
        seconds at most: idem serve refuses to start on a store it cannot open."""
        return self.start_while_store_out(lambda: self.start_once(clock_offset), heal_wait, 1.0)

    def store_refused(self):
        with open(self.log, errors="replace") as log:
            lines = log.read().splitlines()
        return bool(lines) and "cannot open the store" in lines[-1]

    def start_once(self, clock_offset):
        env = dict(os.environ)
        if clock_offset is not None and os.path.exists(FAKETIME):
            env["LD_PRELOAD"] = FAKETIME
            env["FAKETIME"] = "%+.1fs" % clock_offset
            env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
            asan = env.get("ASAN_OPTIONS", "")
            env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"
        with open(self.log, "a") as log:
            # The clock the gateway's log lines are stamped with: the storm maps them back to
            # its own clock (storm.record_gateway_log).
            log.write("==== storm: start clock %+.1fs %s\n" % (
                clock_offset if clock_offset is not None and os.path.exists(FAKETIME) else 0.0,
                " ".join(self.command())))
            log.flush()
            cmd = self.command()
            if self.netns is not None:
                cmd = self.netns.wrap(cmd)
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=log,
                                         stdin=subprocess.DEVNULL, env=env)
        self.stopped = False
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                error = StoreNotReady if self.store_refused() else RuntimeError
                raise error("%s exited with %s at start; see %s" %
                            (self.name, self.proc.returncode, self.log))
            try:
                with urllib.request.urlopen("http://%s:%d/healthz" % (self.host, self.admin),
                                            timeout=1) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("%s did not answer /healthz within 60 s; see %s" % (self.name, self.log))

    def terminate(self, timeout=30):
        """SIGTERM: a drain; returns the exit status (SIGKILL after `timeout`)."""
        if not self.alive():
            return None
        self.signal(signal.SIGCONT)
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return "killed"

    def log_lines(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read().splitlines()
        except OSError:
            return []

    def reload(self, text):
        """Writes `text` as the config file, sends SIGHUP and waits for the gateway's SIGHUP line."""
        before = sum(1 for line in self.log_lines() if "SIGHUP" in line)
        with open(self.config, "w") as f:
            f.write(text)
        self.signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.alive():
            lines = [line for line in self.log_lines() if "SIGHUP" in line]
            if len(lines) > before:
                return lines[-1]
            time.sleep(0.05)
        return None


class SqliteStore:
    def __init__(self, work):
        self.path = os.path.join(work, "idem.db")
        self.uri = "sqlite:" + self.path
        self.ports = []  # what a gateway cut off its store cannot reach: none, a file

    def trust(self, subnet):
        pass  # a file: no one to let in

    def hold_write_lock(self, duration):
        """Holds SQLite's write lock (BEGIN IMMEDIATE) for `duration` seconds, as a backup or an
        `idem keys` run would."""
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            time.sleep(duration)
            conn.execute("ROLLBACK")
        finally:
            conn.close()

    def stop(self):
        pass


class PostgresStore:
    script = os.path.join(REPO, "scripts", "pg-fixture.sh")

    def __init__(self, work):
        self.state = os.path.join(work, "pg")
        run([self.script, "start", self.state])
        with open(os.path.join(self.state, "uri")) as f:
            self.uri = f.read().strip()
        self.env = {}
        with open(os.path.join(self.state, "env")) as f:
            for line in f:
                name, _, value = line.strip().partition("=")
                self.env[name] = value
        self.ports = [int(self.env["IDEM_PG_PORT"])]

    def fixture(self, what):
        run([self.script, what, self.state])

    def trust(self, subnet):
        """Lets in connections from `subnet` too (the gateways' network namespaces, netns.py),
        as the fixture lets in loopback: a line in pg_hba.conf, and the server reloads it."""
        psql = [os.path.join(self.env["IDEM_PG_BIN"], "psql"), "-X", "-q", "-At", "-h",
                "127.0.0.1", "-p", self.env["IDEM_PG_PORT"], "-U", "postgres", "-d", "postgres"]
        hba = run(psql + ["-c", "SHOW hba_file"]).strip()
        with open(hba, "a") as f:
            f.write("host  all all           %s trust\n" % subnet)
        run(psql + ["-c", "SELECT pg_reload_conf()"])

    def terminate_backends(self):
        psql = os.path.join(self.env["IDEM_PG_BIN"], "psql")
        run([psql, "-X", "-q", "-h", "127.0.0.1", "-p", self.env["IDEM_PG_PORT"], "-U", "postgres",
             "-d", "postgres", "-c",
             "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
             "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"])

    def stop(self):
        subprocess.run([self.script, "stop", self.state], stdout=subprocess.DEVNULL)


class StoreNotReady(RuntimeError):
    """A gateway exited at start because it could not open its store."""


def run(cmd, env=None):
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=env)
    if done.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), done.returncode,
                                                    done.stdout[-2000:]))
    return done.stdout
