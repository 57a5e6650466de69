#!/bin/bash
# PID 1 of the RDMA test guest (installed as /sbin/rvma-init; booted with init=/sbin/rvma-init).
# Mounts the host folders listed by run.sh, brings up a Soft-RoCE device, runs one command and
# powers off. The device sits on a dummy netdev (no traffic can leave the guest), or, booted
# with rvma.addr=IP (a guest of a pair, pair.sh), on the virtual NIC eth0 with that address, so
# its RoCE packets cross the wire to the other guest.
#
# Talks to the host only through the run folder named by rvma.run= on the kernel command line:
#   in:  shares (tag<TAB>path<TAB>mount options), links (target<TAB>link), cmd.sh, timeout
#   out: ready (guest uptime when rxe0 was active), output.log (the command's stdout+stderr),
#        exit_code, error (why the guest could not run the command)
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb

RXE_NETDEV=rxenet0
RXE_DEV=rxe0
RXE_ADDR=10.77.0.1
RXE_PREFIX=24

log() { echo "rvma-init: $*" >/dev/console 2>/dev/null || echo "rvma-init: $*"; }

# Power off; if that fails, returning from PID 1 panics the kernel and panic=-1 plus QEMU's
# -no-reboot turn the panic into a QEMU exit, so the host never waits on a stuck guest.
power_off() {
  sync
  echo o >/proc/sysrq-trigger
  sleep 20
  exit 1
}

fail() {
  log "error: $*"
  if [ -n "${run:-}" ] && mountpoint -q "$run" 2>/dev/null; then
    printf '%s\n' "$*" >>"$run/error"
  fi
  power_off
}

# The initramfs usually moved /proc, /sys and /dev over already.
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mountpoint -q /dev/pts || mount -t devpts devpts /dev/pts
mountpoint -q /dev/shm || mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -o remount,rw / 2>/dev/null || true

run= nic_addr=
for arg in $(cat /proc/cmdline); do
  case $arg in
    rvma.run=*) run=${arg#rvma.run=} ;;
    rvma.addr=*) nic_addr=${arg#rvma.addr=} ;;
  esac
done
if [ -n "$nic_addr" ]; then
  RXE_NETDEV=eth0
  RXE_ADDR=$nic_addr
fi
[ -n "$run" ] || fail "no rvma.run= on the kernel command line"

modprobe -a 9pnet_virtio 9p || fail "cannot load the 9p modules"
# cache=none: the host streams output.log while the command runs.
mkdir -p "$run"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none rvmarun "$run" \
  || fail "cannot mount the run folder (tag rvmarun) at $run"

# Host folders, mounted at the same paths as on the host so absolute paths work unchanged.
if [ -f "$run/shares" ]; then
  while IFS=$'\t' read -r tag path opts; do
    [ -n "$tag" ] || continue
    mkdir -p "$path"
    mount -t 9p -o "trans=virtio,version=9p2000.L,msize=262144${opts:+,$opts}" "$tag" "$path" \
      || fail "cannot mount host folder $path (tag $tag)"
  done <"$run/shares"
fi
if [ -f "$run/links" ]; then
  while IFS=$'\t' read -r target link; do
    [ -n "$target" ] || continue
    mkdir -p "$(dirname "$link")"
    ln -sfn "$target" "$link" || fail "cannot link $link -> $target"
  done <"$run/links"
fi

ip link set lo up
modprobe -a dummy ib_uverbs rdma_ucm rdma_rxe || fail "cannot load rdma_rxe (Soft-RoCE)"
if [ -n "$nic_addr" ]; then
  modprobe virtio_net || fail "cannot load virtio_net"
  for _ in $(seq 1 40); do [ -e /sys/class/net/eth0 ] && break; sleep 0.25; done
  [ -e /sys/class/net/eth0 ] || fail "no eth0: the guest was booted with rvma.addr but no NIC"
else
  ip link add "$RXE_NETDEV" type dummy || fail "cannot create the dummy netdev $RXE_NETDEV"
fi
ip addr add "$RXE_ADDR/$RXE_PREFIX" dev "$RXE_NETDEV"
ip link set "$RXE_NETDEV" up
rdma link add "$RXE_DEV" type rxe netdev "$RXE_NETDEV" || fail "rdma link add $RXE_DEV failed"

# The port turns ACTIVE asynchronously after the link is added; bounded wait.
active=
for _ in $(seq 1 120); do
  if ibv_devinfo -d "$RXE_DEV" 2>/dev/null | grep -q PORT_ACTIVE; then active=1; break; fi
  sleep 0.5
done
if [ -z "$active" ]; then
  { ibv_devinfo -v 2>&1; rdma link show 2>&1; ip addr 2>&1; } >"$run/devinfo.log"
  fail "$RXE_DEV did not reach PORT_ACTIVE within 60 s (see devinfo.log)"
fi

# Registering memory regions needs locked memory.
ulimit -l unlimited
cut -d' ' -f1 /proc/uptime >"$run/ready"

limit=$(cat "$run/timeout" 2>/dev/null || echo 1140)
export RVMA_IN_VM=1 RVMA_VM_RDMA_DEV=$RXE_DEV RVMA_VM_RDMA_ADDR=$RXE_ADDR RVMA_VM_RDMA_NETDEV=$RXE_NETDEV
timeout -k 10 "$limit" bash "$run/cmd.sh" </dev/null >>"$run/output.log" 2>&1
code=$?
[ "$code" -eq 124 ] && echo "rvma-init: command timed out after $limit s" >>"$run/output.log"
echo "$code" >"$run/exit_code.tmp"
mv "$run/exit_code.tmp" "$run/exit_code"
power_off
