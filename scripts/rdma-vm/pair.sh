#!/usr/bin/env bash
# Two Soft-RoCE guests joined by a wire: runs one command in the first guest (10.77.0.1) while
# the second (10.77.0.2) serves test/pair/remote-exec-server.js, through which the command
# starts processes there. Each guest's rxe0 sits on its virtual NIC, and the NICs' Ethernet
# frames cross wire.js on the host, which can drop or reorder them: real RoCE v2 packets between
# two devices, with rxe's retransmissions when frames are lost.
#
#   scripts/rdma-vm/pair.sh [--] CMD [ARGS...]     (CMD runs in the first guest, cwd = the repository)
#
# The command sees:
#   RVMA_PAIR_PEER   the second guest's address (10.77.0.2)
#   RVMA_PAIR_EXEC   HOST:PORT of its remote-exec server (test/pair/remote-exec.js runs there);
#                    when the second guest stops (a test halts it), it boots again
#   RVMA_PAIR_WIRE   a folder shared by both guests and the wire: write control there
#                    ({"loss": percent, "reorder": percent}), read stats (frames forwarded,
#                    dropped, reordered)
# Environment: as run.sh (RVMA_VM_TIMEOUT, RVMA_VM_MEM, RVMA_VM_SMP, RVMA_VM_KEEP...), for each
# guest. Exit code: the command's, or run.sh's (124 timed out, 125 the guest failed).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
log() { echo "rdma-pair: $*" >&2; }

[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { log "usage: $0 [--] CMD [ARGS...]"; exit 2; }
timeout_s=${RVMA_VM_TIMEOUT:-1200}

# Built once here: the two guests must not both build it.
bash "$here/build-image.sh" >/dev/null

wire=$(mktemp -d "${TMPDIR:-/tmp}/rvma-wire.XXXXXX")
wpid='' bpid='' rmem=''
finish() {
  local rc=$?
  [ -n "$rmem" ] && echo "$rmem" >/proc/sys/net/core/rmem_default
  [ -n "$bpid" ] && { kill -TERM "$bpid" 2>/dev/null || true; wait "$bpid" 2>/dev/null || true; }
  [ -n "$wpid" ] && { kill -TERM "$wpid" 2>/dev/null || true; wait "$wpid" 2>/dev/null || true; }
  [ -s "$wire/stats" ] && log "wire: $(cat "$wire/stats")"
  if [ "${RVMA_VM_KEEP:-}" = 1 ]; then log "wire folder kept: $wire"; else rm -rf "$wire"; fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# QEMU's wire sockets take the host's default receive buffer (208 KiB: about 90 frames), and a
# guest's emulated CPUs drain them slowly: a 1 MiB RDMA read's response (1,024 frames) would
# overflow it every time it is sent again, and never get through. Deeper while the pair runs.
if [ -w /proc/sys/net/core/rmem_default ]; then
  rmem=$(cat /proc/sys/net/core/rmem_default)
  [ "$rmem" -lt 4194304 ] && echo 4194304 >/proc/sys/net/core/rmem_default || rmem=''
fi
node "$here/wire.js" "$wire" &
wpid=$!
for _ in $(seq 1 100); do [ -s "$wire/ports" ] && break; sleep 0.1; done
[ -s "$wire/ports" ] || { log "error: the wire did not start"; exit 125; }
read -r a_port a_wire b_port b_wire <"$wire/ports"

export RVMA_PAIR_PEER=10.77.0.2 RVMA_PAIR_EXEC=10.77.0.2:7070 RVMA_PAIR_WIRE=$wire
share=$wire${RVMA_VM_SHARE:+:$RVMA_VM_SHARE}

# The second guest serves until the first is done (then it is powered off with the wire). A
# test may halt it (a machine lost): it boots again, and serves the tests after that one.
(
  guest=''
  trap '[ -n "$guest" ] && kill -TERM "$guest" 2>/dev/null; wait "$guest" 2>/dev/null; exit 0' TERM
  while :; do
    RVMA_VM_WIRE=$b_port:$b_wire RVMA_VM_ADDR=$RVMA_PAIR_PEER RVMA_VM_SHARE=$share RVMA_VM_TIMEOUT=$((timeout_s + 120)) \
      bash "$here/run.sh" -- node test/pair/remote-exec-server.js "$RVMA_PAIR_PEER" 7070 &
    guest=$!
    wait "$guest" || true
    log "the second guest stopped: booting it again"
  done
) > >(sed -u 's/^/[second guest] /' >&2) 2>&1 &
bpid=$!

RVMA_VM_WIRE=$a_port:$a_wire RVMA_VM_ADDR=10.77.0.1 RVMA_VM_SHARE=$share \
  bash "$here/run.sh" -- "$@"
