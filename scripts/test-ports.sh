# Loopback ports for the test fixtures' servers (sourced by nats-fixture.sh and pg-fixture.sh).
#
# A fixture's server keeps its ports for its whole life, and the tests kill, pause and restart
# servers on the same ports. A port must therefore stay out of everybody else's hands while its
# server is down, or the restart fails and every later test of that fixture fails with it. So
# ports are drawn the way the e2e tests' FreePort (tests/gateway/e2e_support.cc) draws them:
#   - below the kernel's ephemeral range, which outgoing connections take their source ports
#     from (any connection of any test could otherwise take a stopped server's port);
#   - each claimed with an exclusive flock on /tmp/idem-test-ports/PORT, the directory FreePort
#     claims its ports in, so no e2e test is ever handed a fixture's port.
# The locks are held by a small holder process started with hold_reserved_ports and ended with
# release_reserved_ports, so they outlive the script that took them and every server restart.

test_ports_dir=/tmp/idem-test-ports
reserved_port_fds=()

# test_port_range: prints "FIRST LAST", the range ports are drawn from (as FreePort's).
test_port_range() {
  local low=32768 high=60999
  if [[ -r /proc/sys/net/ipv4/ip_local_port_range ]]; then
    read -r low high </proc/sys/net/ipv4/ip_local_port_range || true
  fi
  if ((low - 1 - 10000 >= 1000)); then echo "10000 $((low - 1))"; else echo "$((high + 1)) 65535"; fi
}

# reserve_port: prints a port nobody listens on and no other test process has claimed, and
# claims it for this process (and the holder started later). Sets reserved_port to the port too,
# because a command substitution would run in a subshell whose lock dies with it.
reserve_port() {
  local first last port fd
  read -r first last < <(test_port_range)
  mkdir -p "$test_ports_dir" 2>/dev/null || true
  chmod 1777 "$test_ports_dir" 2>/dev/null || true
  while true; do
    port=$((first + (RANDOM * 32768 + RANDOM) % (last - first + 1)))
    if ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then continue; fi
    # A file nobody can open here (another user's) leaves only the listening check, as FreePort.
    if ! { exec {fd}<>"$test_ports_dir/$port"; } 2>/dev/null; then break; fi
    if flock -n "$fd"; then
      reserved_port_fds+=("$fd")
      break
    fi
    exec {fd}>&-
  done
  reserved_port=$port
}

# release_unheld_ports: gives back the ports this process claimed (a failed start's).
release_unheld_ports() {
  local fd
  for fd in "${reserved_port_fds[@]}"; do exec {fd}>&-; done
  reserved_port_fds=()
}

# hold_reserved_ports PID_FILE: starts the holder, which inherits this process's claims and keeps
# them until release_reserved_ports PID_FILE; then this process lets go of its own descriptors.
# The holder runs detached from our output so that nobody waiting for it to close is kept waiting.
hold_reserved_ports() {
  local pid_file=$1
  setsid sleep 604800 </dev/null >/dev/null 2>&1 &
  echo $! >"$pid_file"
  release_unheld_ports
}

release_reserved_ports() {
  local pid_file=$1
  if [[ -f "$pid_file" ]]; then
    kill -KILL "$(cat "$pid_file")" 2>/dev/null || true
    rm -f "$pid_file"
  fi
}
