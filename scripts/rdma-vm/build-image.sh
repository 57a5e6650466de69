#!/usr/bin/env bash
# Builds (once, cached) the guest used to test the verbs provider on real rdma-core: a Debian
# bookworm root with its own kernel (which has rdma_rxe, Soft-RoCE), as an ext4 disk image plus
# the kernel and initrd for a direct -kernel/-initrd boot. The host kernel has no RDMA support,
# hence a full guest rather than a container.
#
# Prints the image folder (disk.img, vmlinuz, initrd.img) as the only line on stdout; progress
# goes to stderr. Needs root (debootstrap, apt-get).
#
# Environment:
#   RVMA_VM_CACHE   cache folder (default /var/cache/rvma-rdma-vm)
#   RVMA_VM_MIRROR  Debian mirror (default http://deb.debian.org/debian)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
cache=${RVMA_VM_CACHE:-/var/cache/rvma-rdma-vm}
mirror=${RVMA_VM_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
guest_packages=linux-image-amd64,initramfs-tools,kmod,udev,iproute2,procps,rdma-core,ibverbs-providers,ibverbs-utils,rdmacm-utils,perftest,redis-server

# Only the image folder goes to the real stdout (fd 3); every tool's chatter goes to stderr.
exec 3>&1 1>&2
log() { echo "rdma-vm: $*" >&2; }
die() { echo "rdma-vm: error: $*" >&2; exit 1; }

# Two cache levels: the debootstrap root only depends on this script; the disk image also
# embeds guest-init.sh, so editing the init re-makes the disk (seconds) but not the root.
root_key=$(sha256sum "$here/build-image.sh" | cut -c1-16)
image_key=$(cat "$here/build-image.sh" "$here/guest-init.sh" | sha256sum | cut -c1-16)
rootfs=$cache/rootfs-$root_key
image=$cache/image-$image_key

if [ -e "$image/complete" ]; then
  echo "$image" >&3
  exit 0
fi

[ "$(id -u)" -eq 0 ] || die "building the guest image needs root (debootstrap); run as root once, or point RVMA_VM_CACHE at a prebuilt cache"

install_host_tools() {
  local pkgs=(qemu-system-x86 qemu-utils debootstrap e2fsprogs) missing=() p
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  log "installing host packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get update -q >&2 || die "apt-get update failed"
  timeout 1200 apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 \
    || die "apt-get install ${missing[*]} failed"
}
install_host_tools

mkdir -p "$cache"
exec 8>"$cache/build.lock"
# Another run may be building the same image; wait for it rather than build twice.
flock -w 2400 8 || die "timed out waiting 40 min for $cache/build.lock (another build still running?)"
if [ -e "$image/complete" ]; then
  echo "$image" >&3
  exit 0
fi

# Unmount anything a killed debootstrap/chroot left mounted below $1, deepest first, so that
# rm -rf never walks into the host's /proc or /sys.
umount_below() {
  local dir=$1 m
  awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
}
cleanup_dirs=()
cleanup() {
  local d
  for d in "${cleanup_dirs[@]}"; do
    umount_below "$d"
    rm -rf --one-file-system "$d"
  done
}
trap cleanup EXIT

started=$SECONDS

if [ ! -e "$rootfs/.complete" ]; then
  tmp=$rootfs.tmp
  cleanup_dirs+=("$tmp")
  umount_below "$tmp"
  rm -rf --one-file-system "$tmp"
  log "debootstrap $suite (minbase + kernel + rdma-core) into $tmp ..."
  timeout 1800 debootstrap --variant=minbase --include="$guest_packages" \
    "$suite" "$tmp" "$mirror" >"$cache/debootstrap.log" 2>&1 \
    || { tail -n 30 "$cache/debootstrap.log" >&2; die "debootstrap failed (full log: $cache/debootstrap.log)"; }

  # The root is an ext4 virtio disk: an initrd with just those drivers (MODULES=list), loaded
  # explicitly, unpacks several seconds faster under TCG than the generic one.
  printf '%s\n' virtio_pci virtio_blk ext4 >>"$tmp/etc/initramfs-tools/modules"
  sed -i 's/^MODULES=.*/MODULES=list/' "$tmp/etc/initramfs-tools/initramfs.conf"
  mount -t proc proc "$tmp/proc"
  timeout 600 chroot "$tmp" update-initramfs -u -k all >>"$cache/debootstrap.log" 2>&1 \
    || { umount "$tmp/proc"; die "update-initramfs in the guest root failed (log: $cache/debootstrap.log)"; }
  umount "$tmp/proc"

  echo rvma-rdma-vm >"$tmp/etc/hostname"
  printf '127.0.0.1 localhost\n10.77.0.1 rvma-rdma-vm\n' >"$tmp/etc/hosts"
  : >"$tmp/etc/resolv.conf"
  chroot "$tmp" apt-get clean
  rm -rf "$tmp"/var/lib/apt/lists/* "$tmp"/usr/share/doc/* "$tmp"/usr/share/man/*
  touch "$tmp/.complete"
  rm -rf --one-file-system "$rootfs"
  mv "$tmp" "$rootfs"
  log "guest root built in $((SECONDS - started)) s"
fi

tmp=$image.tmp
cleanup_dirs+=("$tmp")
rm -rf "$tmp"
mkdir -p "$tmp"
install -m 0755 "$here/guest-init.sh" "$rootfs/sbin/rvma-init"
kernel=$(ls "$rootfs"/boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1)
initrd=$(ls "$rootfs"/boot/initrd.img-* 2>/dev/null | sort -V | tail -n 1)
[ -n "$kernel" ] && [ -n "$initrd" ] || die "no kernel/initrd under $rootfs/boot"
cp "$kernel" "$tmp/vmlinuz"
cp "$initrd" "$tmp/initrd.img"
# Room for what tests write outside the shared folders (QEMU's snapshot=on keeps those
# writes in a throw-away overlay, so the image itself never changes).
size_mb=$(( $(du -sm "$rootfs" | cut -f1) + 1024 ))
timeout 600 mkfs.ext4 -q -F -L rvmaroot -d "$rootfs" "$tmp/disk.img" "${size_mb}M" >/dev/null \
  || die "mkfs.ext4 -d failed"
touch "$tmp/complete"
rm -rf "$image"
mv "$tmp" "$image"
log "disk image built in $((SECONDS - started)) s total: $image"

# Drop images and roots from older versions of the scripts, unless a run is using them.
for old in "$cache"/image-* "$cache"/rootfs-*; do
  [ -d "$old" ] || continue
  case $old in "$image" | "$rootfs" | *.tmp) continue ;; esac
  (
    exec 7>"$old.inuse"
    flock -n 7 || exit 0
    umount_below "$old"
    rm -rf --one-file-system "$old"
    rm -f "$old.inuse"
  ) || true
done
for lock in "$cache"/*.inuse; do
  [ -e "$lock" ] && [ ! -d "${lock%.inuse}" ] && rm -f "$lock"
done

echo "$image" >&3
