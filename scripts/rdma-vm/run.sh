#!/usr/bin/env bash
# Runs one command inside a QEMU guest that has a real Soft-RoCE device (rxe0, RoCE v2 on
# 10.77.0.1), with the repository and the host's node shared at the same paths, and exits with
# the command's exit code. The host has no RDMA support, so this is how the verbs provider
# meets real rdma-core.
#
#   scripts/rdma-vm/run.sh [--] CMD [ARGS...]      (CMD runs with cwd = the repository)
#
# Environment:
#   RVMA_VM_TIMEOUT  seconds for boot + command before the guest is killed (default 1200)
#   RVMA_VM_MEM      guest memory in MiB (default 2048)
#   RVMA_VM_SMP      guest CPUs (default 2)
#   RVMA_VM_SHARE    extra host folders to share at the same paths, colon-separated
#   RVMA_VM_ENV      names of host environment variables to pass to CMD, space-separated
#                    (CI, NODE_OPTIONS and RVMA_* are passed when set)
#   RVMA_VM_REPO_CACHE  9p cache mode of the repository share: loose (default) or none
#   RVMA_VM_KEEP=1   keep the run folder (console log, output) after the run
#   RVMA_VM_KERNEL_ARGS  extra kernel arguments (e.g. loglevel=7 to see the boot in console.log)
#   RVMA_VM_CACHE    image cache folder (see build-image.sh)
#   RVMA_VM_WIRE     LOCAL:REMOTE UDP ports on 127.0.0.1: the guest gets a virtual NIC (eth0)
#                    whose Ethernet frames go out as datagrams from LOCAL to REMOTE (a wire
#                    that pair.sh relays to another guest), and rxe0 sits on it
#   RVMA_VM_ADDR     the guest's address on that wire (default 10.77.0.1)
#
# Exit codes besides the command's own: 124 timed out, 125 the guest failed before or
# without running the command, 2 usage.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd -P)
timeout_s=${RVMA_VM_TIMEOUT:-1200}
mem=${RVMA_VM_MEM:-2048}
smp=${RVMA_VM_SMP:-2}

log() { echo "rdma-vm: $*" >&2; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
die() { echo "rdma-vm: error: $1" >&2; exit "${2:-125}"; }

[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || die "usage: $0 [--] CMD [ARGS...]" 2
[[ $timeout_s =~ ^[0-9]+$ ]] && [ "$timeout_s" -ge 60 ] || die "RVMA_VM_TIMEOUT must be whole seconds >= 60" 2

# Paths travel in tab-separated files and on the kernel command line.
check_path() {
  case $1 in *[[:space:]]* | *,*) die "cannot share a path with whitespace or commas: '$1'" 2 ;; esac
}
check_path "$repo"

# --- image ------------------------------------------------------------------------------
t0=$(date +%s.%N)
image=$(bash "$here/build-image.sh") || die "could not build the guest image"
log "image ready in $(since "$t0") s: $image"
for f in disk.img vmlinuz initrd.img; do
  [ -s "$image/$f" ] || die "image is incomplete, missing $image/$f (delete $image and retry)"
done
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found (build-image.sh installs it as root)"

# --- run folder -------------------------------------------------------------------------
run=$(mktemp -d "${TMPDIR:-/tmp}/rvma-vm.XXXXXX")
check_path "$run"
qpid='' tpid=''
finish() {
  local rc=$?
  if [ -n "$qpid" ]; then
    kill -KILL "$qpid" 2>/dev/null || true
    wait "$qpid" 2>/dev/null || true
  fi
  [ -n "$tpid" ] && kill "$tpid" 2>/dev/null || true
  if [ "${RVMA_VM_KEEP:-}" = 1 ]; then
    log "run folder kept: $run"
  else
    rm -rf "$run"
  fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

: >"$run/output.log"
: >"$run/shares"
: >"$run/links"
echo $((timeout_s > 120 ? timeout_s - 60 : timeout_s / 2)) >"$run/timeout"

virtfs=()
n=0
share() { # share HOST_DIR GUEST_DIR [ro|CACHE_MODE]
  local tag=share$n opts=cache=${3:-none} ro=
  n=$((n + 1))
  # Read-only folders are always cached by the guest; writable ones use the given mode.
  [ "${3:-}" = ro ] && opts=cache=loose,ro && ro=,readonly=on
  virtfs+=(-virtfs "local,path=$1,mount_tag=$tag,security_model=none,multidevs=remap,id=$tag$ro")
  printf '%s\t%s\t%s\n' "$tag" "$2" "$opts" >>"$run/shares"
}
# The run folder: command in, output and exit code out (uncached, so output streams).
virtfs+=(-virtfs "local,path=$run,mount_tag=rvmarun,security_model=none,id=rvmarun")
# cache=loose roughly halves the time node spends resolving and reading node_modules over
# 9p; the guest then does not see host edits made during the run, which nothing needs.
share "$repo" "$repo" "${RVMA_VM_REPO_CACHE:-loose}"
if [ -n "${RVMA_VM_SHARE:-}" ]; then
  IFS=: read -r -a extra <<<"$RVMA_VM_SHARE"
  for d in "${extra[@]}"; do
    [ -n "$d" ] || continue
    d=$(cd "$d" && pwd -P) || die "RVMA_VM_SHARE: no such folder: $d" 2
    check_path "$d"
    share "$d" "$d"
  done
fi

# The host's node runs in the guest (same Debian release, same glibc). Its folder is often
# /usr/bin, which must not cover the guest's own, so it is mounted aside and linked to.
if node_path=$(command -v node); then
  node_real=$(readlink -f "$node_path")
  check_path "$node_real"
  share "$(dirname "$node_real")" /run/rvma-host/node-bin ro
  for link in "$node_path" "$node_real" /usr/local/bin/node; do
    printf '%s\t%s\n' /run/rvma-host/node-bin/node "$link" >>"$run/links"
  done
  # npm and npx live in the prefix's lib/node_modules; share it at its own path.
  modules=$(dirname "$(dirname "$node_real")")/lib/node_modules
  if [ -d "$modules/npm" ]; then
    check_path "$modules"
    share "$modules" "$modules" ro
    for tool in npm npx; do
      t=$(command -v "$tool" 2>/dev/null) || continue
      printf '%s\t%s\n' "$(readlink -f "$t")" "$t" >>"$run/links"
    done
  fi
else
  log "warning: no node on the host PATH; the guest will have none"
fi

{
  echo "cd $(printf '%q' "$repo") || exit 126"
  for name in CI NODE_OPTIONS ${RVMA_VM_ENV:-} $(compgen -e | grep '^RVMA_' | grep -v '^RVMA_VM_' || true); do
    [ -n "${!name+x}" ] && echo "export $name=$(printf '%q' "${!name}")"
  done
  printf 'exec'
  printf ' %q' "$@"
  echo
} >"$run/cmd.sh"

# A guest of a pair: its NIC is a UDP wire on the host's loopback (QEMU's dgram netdev).
nic=(-nic none) kernel_net=
if [ -n "${RVMA_VM_WIRE:-}" ]; then
  [[ $RVMA_VM_WIRE =~ ^([0-9]+):([0-9]+)$ ]] || die "RVMA_VM_WIRE must be LOCAL:REMOTE ports" 2
  addr=${RVMA_VM_ADDR:-10.77.0.1}
  [[ $addr =~ ^10\.77\.0\.([0-9]+)$ ]] || die "RVMA_VM_ADDR must be an address in 10.77.0.0/24" 2
  mac=$(printf '52:54:00:77:00:%02x' "${BASH_REMATCH[1]}")
  nic=(-netdev "dgram,id=wire,local.type=inet,local.host=127.0.0.1,local.port=${RVMA_VM_WIRE%%:*},remote.type=inet,remote.host=127.0.0.1,remote.port=${RVMA_VM_WIRE##*:}"
    -device "virtio-net-pci,netdev=wire,mac=$mac")
  kernel_net="rvma.addr=$addr"
fi

# --- boot -------------------------------------------------------------------------------
# TCG, not KVM: KVM does not boot a stock kernel on these machines. No network device unless
# RVMA_VM_WIRE asks for one; alone, the RoCE traffic stays on a dummy netdev inside the guest.
# snapshot=on keeps the image pristine.
# Shared lock: a build for a newer script version only prunes this image once no run uses it.
if [ -w "$(dirname "$image")" ]; then
  exec 9>"$image.inuse"
  flock -s -w 60 9 || die "cannot take the in-use lock $image.inuse"
fi
log "booting guest (TCG, ${smp} CPUs, ${mem} MiB, timeout ${timeout_s} s): $*"
boot_t0=$(date +%s.%N)
qemu-system-x86_64 \
  -name rvma-rdma-vm -machine pc -accel tcg,thread=multi -cpu max -smp "$smp" -m "$mem" \
  -nodefaults -no-user-config -display none -monitor none "${nic[@]}" -no-reboot \
  -serial "file:$run/console.log" \
  -kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
  -append "console=ttyS0 root=/dev/vda rootfstype=ext4 rw init=/sbin/rvma-init quiet loglevel=3 panic=-1 net.ifnames=0 rvma.run=$run $kernel_net ${RVMA_VM_KERNEL_ARGS:-}" \
  -drive "file=$image/disk.img,format=raw,if=virtio,snapshot=on" \
  "${virtfs[@]}" \
  </dev/null >"$run/qemu.log" 2>&1 &
qpid=$!
tail -n +1 -f --pid="$qpid" "$run/output.log" &
tpid=$!

deadline=$(( $(date +%s) + timeout_s ))
booted='' timed_out=''
while kill -0 "$qpid" 2>/dev/null; do
  if [ -z "$booted" ] && [ -s "$run/ready" ]; then
    booted=1
    log "guest ready (rxe0 ACTIVE) $(since "$boot_t0") s after QEMU start (guest uptime $(cat "$run/ready") s)"
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    timed_out=1
    log "error: timed out after ${timeout_s} s; killing QEMU"
    kill -TERM "$qpid" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$qpid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$qpid" 2>/dev/null || true
    break
  fi
  sleep 0.5
done
qrc=0
wait "$qpid" || qrc=$?
qpid=
wait "$tpid" 2>/dev/null || true
tpid=
log "guest off after $(since "$boot_t0") s"

show_diagnostics() {
  [ -s "$run/error" ] && sed 's/^/rdma-vm: guest: /' "$run/error" >&2
  [ -s "$run/devinfo.log" ] && { log "guest devinfo.log:"; cat "$run/devinfo.log" >&2; }
  [ -s "$run/qemu.log" ] && { log "qemu output:"; tail -n 20 "$run/qemu.log" >&2; }
  [ -s "$run/console.log" ] && { log "last lines of the guest console:"; tail -n 40 "$run/console.log" >&2; }
  return 0
}

if [ -s "$run/exit_code" ]; then
  code=$(cat "$run/exit_code")
  [ "$code" -ne 0 ] && log "command exited with $code"
  exit "$code"
fi
show_diagnostics
[ -n "$timed_out" ] && exit 124
die "the guest stopped without running the command (QEMU exit $qrc)"
