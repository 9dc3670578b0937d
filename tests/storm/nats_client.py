"""The storm's few requests to a NATS cluster, on the core protocol (no client library): the
JetStream store's setup and views (nats_store.py), the step-down fault (store_faults.py) and the
leader probe (nats_leader_probe.py) use them."""

import json
import os
import socket
import urllib.parse


def nats_request(uri, subject, payload=b"", timeout=5.0, headers=None):
    """One NATS request (core protocol, no client library) to the first server of `uri` that
    takes a connection; returns the reply's payload. `headers` (a dict) go out as an HPUB."""
    hosts = uri[len("nats://"):].split("?")[0].split(",")
    last = None
    for host in hosts:
        name, _, port = host.rpartition(":")
        try:
            with socket.create_connection((name, int(port)), timeout=timeout) as s:
                f = s.makefile("rb")
                f.readline()  # INFO
                # An inbox of its own: a reply to another thread's request, or a late reply to
                # an earlier one that timed out, must not be read as this request's (with one
                # inbox per process the leader probe counted acknowledgements of the wrong key).
                inbox = "_INBOX.storm.%d.%s" % (os.getpid(), os.urandom(6).hex())
                connect = ('CONNECT {"verbose":false,"pedantic":false,"protocol":1,'
                           '"headers":true}\r\nSUB %s 1\r\n' % inbox).encode()
                if headers:
                    head = ("NATS/1.0\r\n" + "".join("%s: %s\r\n" % kv for kv in headers.items())
                            + "\r\n").encode()
                    publish = ("HPUB %s %s %d %d\r\n" % (subject, inbox, len(head),
                                                          len(head) + len(payload))).encode() + head
                else:
                    publish = ("PUB %s %s %d\r\n" % (subject, inbox, len(payload))).encode()
                s.sendall(connect + publish + payload + b"\r\n")
                while True:
                    line = f.readline()
                    if not line:
                        raise OSError("the server closed the connection")
                    if line.startswith(b"PING"):
                        s.sendall(b"PONG\r\n")
                    elif line.startswith(b"-ERR"):
                        raise OSError(line.decode().strip())
                    elif line.startswith(b"MSG"):
                        size = int(line.split()[-1])
                        return f.read(size + 2)[:size]
                    elif line.startswith(b"HMSG"):
                        head, size = (int(n) for n in line.split()[-2:])
                        return f.read(size + 2)[head:size]
        except (OSError, ValueError) as error:
            last = error
    raise RuntimeError("no server of %s answered %s: %s" % (uri, subject, last))


def bucket_name(uri):
    query = urllib.parse.parse_qs(uri.split("?", 1)[1] if "?" in uri else "")
    return query["bucket"][0]


def bucket_stream(uri):
    return "KV_" + bucket_name(uri)


def bucket_takes_writes(uri, timeout=1.0):
    """Whether the bucket's stream acknowledges a write now: a delete marker for a key idem never
    uses (idem's listings leave deleted keys out), so nothing of the gateways' changes."""
    try:
        reply = json.loads(nats_request(uri, "$KV.%s.storm-probe" % bucket_name(uri),
                                        timeout=timeout, headers={"KV-Operation": "DEL"}))
    except (RuntimeError, ValueError):
        return False
    return "seq" in reply and "error" not in reply
