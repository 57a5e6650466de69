#!/usr/bin/env bash
# Smoke check, run inside the guest (scripts/rdma-vm/run.sh -- scripts/rdma-vm/smoke.sh):
# Soft-RoCE is up, real verbs traffic flows, and the host's node and host-built addon load.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd -P)
dev=${RVMA_VM_RDMA_DEV:-rxe0}
addr=${RVMA_VM_RDMA_ADDR:-10.77.0.1}
addon=${RVMA_ADDON:-$repo/build/Release/rvma.node}
work=$(mktemp -d)
passed=0 failed=0

check() { # check NAME CMD...: runs CMD, prints its output on failure
  local name=$1 out rc
  shift
  out=$("$@" 2>&1) && rc=0 || rc=$?
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    echo "ok   $name"
    # The few lines worth seeing on success (port state, throughput, versions).
    printf '%s\n' "$out" | grep -E 'hca_id|state|link_layer|iters in|^node |^loaded ' | sed 's/^[[:space:]]*/     /'
  else
    failed=$((failed + 1))
    echo "FAIL $name (exit $rc)"
    printf '%s\n' "$out" | sed 's/^/     /'
  fi
}

port_active() {
  ibv_devinfo -d "$dev" | tee "$work/devinfo" | grep -q PORT_ACTIVE || { cat "$work/devinfo"; return 1; }
  grep -E 'hca_id|transport|state|link_layer' "$work/devinfo" >&2
}

# RC pingpong between two endpoints on the same rxe device; the client reaches the server's
# out-of-band TCP port on the rxe netdev's address. GID index 1 is the IPv4 (RoCE v2) GID.
rc_pingpong() {
  local spid rc=0
  timeout 90 ibv_rc_pingpong -d "$dev" -g 1 -n 100 >"$work/server" 2>&1 &
  spid=$!
  for _ in $(seq 1 60); do
    ss -ltn 2>/dev/null | grep -q ':18515 ' && break
    sleep 0.5
  done
  timeout 90 ibv_rc_pingpong -d "$dev" -g 1 -n 100 "$addr" >"$work/client" 2>&1 || rc=$?
  wait "$spid" || rc=$((rc ? rc : $?))
  echo "server:"; cat "$work/server"; echo "client:"; cat "$work/client"
  [ "$rc" -eq 0 ] && grep -q 'iters in' "$work/client" && grep -q 'iters in' "$work/server"
}

node_runs() {
  node -e 'console.log("node " + process.versions.node + " in " + require("os").release())'
}

addon_loads() {
  [ -f "$addon" ] || { echo "no addon at $addon (build it on the host first: npm run build:native)"; return 1; }
  node -e 'const m = require(process.argv[1]); console.log("loaded " + process.argv[1] + ": " + Object.keys(m).length + " exports")' "$addon"
}

check "ibv_devinfo: $dev PORT_ACTIVE" port_active
check "ibv_rc_pingpong -d $dev -g 1 (server + client via $addr)" rc_pingpong
check "node runs" node_runs
check "host-built addon loads ($addon)" addon_loads
rm -rf "$work"
echo "smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
