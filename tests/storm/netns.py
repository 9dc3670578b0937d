"""Network partitions for the storm: each `idem serve` gateway runs in a network namespace of its
own, joined to the storm's by a veth pair, so that the nemesis can cut it off the network and a
connection hangs (packets dropped, nothing reset) instead of failing at once.

Inside a gateway's namespace 127.0.0.1 is not a local address: it is routed over the veth pair to
the storm's namespace (route_localnet on both ends), where the store's servers and the upstream
listen on loopback as they do for every other test. So the gateway's --store and --upstream stay
as they are, and only its own listeners move to the namespace's address. Two cuts:

  isolate  the link is taken down: the gateway reaches nothing (clients, upstream, store) and
           nothing reaches it
  store    its packets to the store's ports are dropped (tc, in its namespace): it still talks to
           its clients and the upstream, but its claims, heartbeats and outcomes hang

Needs root, iproute2 (`ip`, `tc`) and a kernel that lets this process make namespaces; where
that is not so, `unavailable()` says why and the storm runs without partitions.
"""

import os
import subprocess


def _run(cmd, check=True):
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and done.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), done.returncode,
                                                    done.stdout.strip()[-500:]))
    return done


def unavailable():
    """Why gateways cannot get namespaces of their own here, or None when they can."""
    if os.geteuid() != 0:
        return "needs root to make network namespaces"
    for tool in ("ip", "tc"):
        if _run(["sh", "-c", "command -v %s" % tool], check=False).returncode != 0:
            return "needs iproute2's '%s' (Debian package iproute2)" % tool
    probe = "idem-storm-probe-%d" % os.getpid()
    made = _run(["ip", "netns", "add", probe], check=False)
    if made.returncode != 0:
        return "this machine refuses a network namespace (%s)" % made.stdout.strip()[-200:]
    _run(["ip", "netns", "del", probe], check=False)
    return None


def _used_subnets():
    out = _run(["ip", "-4", "-o", "addr", "show"], check=False).stdout
    return {w.split("/")[0].rsplit(".", 1)[0] for w in out.split() if w.startswith("10.231.")}


def remove_stale():
    """Removes the namespaces of storm runs whose process is gone (killed by a timeout)."""
    listed = _run(["ip", "netns", "list"], check=False).stdout.split()
    for name in listed:
        parts = name.split("-")
        if len(parts) == 4 and parts[:2] == ["idem", "storm"] and parts[2].isdigit() and \
                not os.path.exists("/proc/%s" % parts[2]):
            _run(["ip", "netns", "del", name], check=False)


class Namespaces:
    """The namespaces of one storm run's gateways: one /30 each in 10.231.X.0/24, X free."""

    def __init__(self):
        remove_stale()
        self.pid = os.getpid()
        self.tag = self.pid % 100000
        used = _used_subnets()
        x = self.tag % 250
        while "10.231.%d" % x in used:
            x = (x + 1) % 250
        self.prefix = "10.231.%d" % x
        self.made = []

    def make(self, index):
        ns = GatewayNamespace(self, index)
        self.made.append(ns)
        return ns

    def remove(self):
        for ns in self.made:
            ns.remove()
        self.made = []


class GatewayNamespace:
    def __init__(self, owner, index):
        self.name = "idem-storm-%d-g%d" % (owner.pid, index)
        self.host_if = "is%dg%dh" % (owner.tag, index)  # at most 15 characters
        self.ns_if = "is%dg%dn" % (owner.tag, index)
        self.host_ip = "%s.%d" % (owner.prefix, 4 * index + 1)
        self.address = "%s.%d" % (owner.prefix, 4 * index + 2)  # the gateway listens here
        self.cut_ports = None
        ns = ["ip", "netns", "exec", self.name]
        _run(["ip", "netns", "add", self.name])
        _run(["ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if])
        _run(["ip", "link", "set", self.ns_if, "netns", self.name])
        _run(["ip", "addr", "add", self.host_ip + "/30", "dev", self.host_if])
        _run(["sysctl", "-q", "-w", "net.ipv4.conf.%s.route_localnet=1" % self.host_if])
        _run(["ip", "link", "set", self.host_if, "up"])
        _run(ns + ["ip", "addr", "add", self.address + "/30", "dev", self.ns_if])
        _run(ns + ["ip", "link", "set", self.ns_if, "up"])
        _run(ns + ["ip", "link", "set", "lo", "up"])
        # 127.0.0.1 is the storm's loopback, reached over the veth pair; no ::1 to try first.
        _run(ns + ["ip", "addr", "del", "127.0.0.1/8", "dev", "lo"])
        _run(ns + ["sysctl", "-q", "-w", "net.ipv4.conf.all.route_localnet=1",
                   "net.ipv4.conf.%s.route_localnet=1" % self.ns_if,
                   "net.ipv6.conf.all.disable_ipv6=1"])
        _run(ns + ["ip", "route", "add", "127.0.0.0/8", "via", self.host_ip, "dev", self.ns_if])
        # Neighbours written in, so that a cut link drops packets rather than failing at once
        # with "no route to host" once the neighbour lookup times out.
        host_mac = _run(["cat", "/sys/class/net/%s/address" % self.host_if]).stdout.strip()
        ns_mac = _run(ns + ["cat", "/sys/class/net/%s/address" % self.ns_if]).stdout.strip()
        _run(ns + ["ip", "neigh", "replace", self.host_ip, "lladdr", host_mac, "dev", self.ns_if,
                   "nud", "permanent"])
        self.ns_mac = ns_mac
        _run(["ip", "neigh", "replace", self.address, "lladdr", ns_mac, "dev", self.host_if,
              "nud", "permanent"])

    def wrap(self, argv):
        """The command line that runs `argv` in this namespace (exec'd: the process is argv's)."""
        return ["ip", "netns", "exec", self.name] + list(argv)

    def isolate(self):
        _run(["ip", "link", "set", self.host_if, "down"])

    def cut_store(self, ports):
        """Drops the namespace's packets to the store's `ports` (its connections hang): an htb
        class whose queue holds nothing, the store's ports sorted into it by a u32 filter (tc's
        drop action and prio qdisc need kernel modules that containers often lack)."""
        tc = ["ip", "netns", "exec", self.name, "tc"]
        dev = ["dev", self.ns_if]
        _run(tc + ["qdisc", "add"] + dev + ["root", "handle", "1:", "htb", "default", "10"])
        for minor in ("10", "20"):
            _run(tc + ["class", "add"] + dev + ["parent", "1:", "classid", "1:" + minor, "htb",
                                                "rate", "10gbit"])
        _run(tc + ["qdisc", "add"] + dev + ["parent", "1:20", "handle", "20:", "pfifo", "limit",
                                            "0"])
        self.cut_ports = list(ports)
        for port in ports:
            _run(tc + ["filter", "add"] + dev + ["parent", "1:", "protocol", "ip", "prio", "1",
                                                 "u32", "match", "ip", "dport", str(port),
                                                 "0xffff", "flowid", "1:20"])

    def heal(self):
        _run(["ip", "link", "set", self.host_if, "up"])
        _run(["ip", "neigh", "replace", self.address, "lladdr", self.ns_mac, "dev", self.host_if,
              "nud", "permanent"])
        if self.cut_ports is not None:
            _run(["ip", "netns", "exec", self.name, "tc", "qdisc", "del", "dev", self.ns_if,
                  "root"])
            self.cut_ports = None
        # The link's own route comes back with it; the one to the storm's loopback may not.
        _run(["ip", "netns", "exec", self.name, "ip", "route", "replace", "127.0.0.0/8", "via",
              self.host_ip, "dev", self.ns_if])

    def remove(self):
        _run(["ip", "netns", "del", self.name], check=False)  # takes its veth pair with it
        _run(["ip", "link", "del", self.host_if], check=False)
