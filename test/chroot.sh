# Minimal Debian roots for tests that need a machine of their own: made once with debootstrap and
# kept in a cache directory, entered with chroot, and left as found. Source this file, then:
#   chroot_make_root [--arch=ARCH] SUITE DIR LOG [PACKAGE ...]
#                                                  debootstrap --variant=minbase, unless DIR exists;
#                                                  ARCH (e.g. arm64) another architecture than this
#                                                  machine's, run through its binfmt_misc handler
#   chroot_mount_system ROOT                       /proc, /sys, /dev, /dev/pts, /dev/shm inside ROOT
#   chroot_mount KIND|bind SOURCE TARGET [OPTIONS] one more mount, undone by chroot_cleanup
#   chroot_cleanup                                 kills what still runs inside the roots that were
#                                                  mounted, then unmounts everything, newest first
# The sourcing script calls chroot_cleanup from its EXIT trap. Needs root, and fuser (psmisc),
# installed with debootstrap when missing.
CHROOT_MOUNTS=()   # mount points, in the order they were mounted
CHROOT_ROOTS=()    # roots whose system directories were mounted

chroot_die() { echo "${0##*/}: $*" >&2; exit 1; }

# The Debian mirror: $BLOOM_DEBIAN_MIRROR, else the one this machine's apt uses (one-line and
# deb822 sources).
debian_mirror() {
  local uri=${BLOOM_DEBIAN_MIRROR:-}
  [ -n "$uri" ] || uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
        sed -nE 's/^[[:space:]]*(URIs:|deb)[[:space:]]+(\[[^]]*\][[:space:]]+)?//p' | tr -s '[:space:]' '\n' |
        grep -E '^https?://[^[:space:]]+/debian/?$' | head -n 1 || true)
  [ -n "$uri" ] || chroot_die "no Debian mirror in this machine's apt sources; set BLOOM_DEBIAN_MIRROR"
  echo "$uri"
}

# Makes DIR with debootstrap (minbase, plus the packages named) when it does not exist yet. The
# root is made under DIR.partial and renamed when complete, so an interrupted run leaves no root
# that looks usable. With --arch=ARCH first, a root of that Debian architecture (its programs run
# by the emulator binfmt_misc names for it, e.g. qemu-user-static's).
chroot_make_root() {
  local arch=
  case ${1:-} in --arch=*) arch=${1#--arch=}; shift ;; esac
  local suite=$1 dir=$2 log=$3 packages mirror partial=$2.partial
  shift 3
  [ -d "$dir" ] && return 0
  if ! command -v debootstrap >/dev/null || ! command -v fuser >/dev/null; then
    echo "installing debootstrap and psmisc"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap psmisc >/dev/null
  fi
  if awk -v p="$partial" 'index($2, p) == 1' /proc/self/mounts | grep -q .; then
    chroot_die "$partial has something mounted below it; unmount it first"
  fi
  rm -rf "$partial"
  mkdir -p "$(dirname "$dir")"
  mirror=$(debian_mirror)
  packages=$(IFS=,; echo "$*")
  echo "making a minimal Debian $suite${arch:+ $arch} root${packages:+ with $packages} from $mirror (once; log: $log)"
  if ! debootstrap --variant=minbase ${arch:+--arch="$arch"} ${packages:+--include="$packages"} \
         "$suite" "$partial" "$mirror" \
         >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    chroot_die "debootstrap of $suite failed"
  fi
  mv "$partial" "$dir"
}

chroot_mount() { # bind|type source target [options]
  local kind=$1 source=$2 target=$3
  mkdir -p "$target"
  if [ "$kind" = bind ]; then
    mount --bind "$source" "$target" || chroot_die "cannot bind-mount $source on $target"
  else
    mount -t "$kind" -o "${4:-defaults}" "$source" "$target" || chroot_die "cannot mount $kind on $target"
  fi
  CHROOT_MOUNTS+=("$target")
}

# What servers, compilers and network tools inside the root expect of a running system.
chroot_mount_system() {
  local root=$1
  CHROOT_ROOTS+=("$root")
  chroot_mount proc proc "$root/proc"
  chroot_mount sysfs sysfs "$root/sys" ro
  [ -c "$root/dev/null" ] || chroot_mount bind /dev "$root/dev"
  chroot_mount devpts devpts "$root/dev/pts" newinstance,ptmxmode=0666,mode=620,gid=5
  chroot_mount tmpfs shm "$root/dev/shm" mode=1777
}

chroot_cleanup() {
  local root i
  # Anything still running inside these roots was started by this run: fuser (psmisc) finds the
  # processes whose root directory (or working directory) is the root itself.
  for root in "${CHROOT_ROOTS[@]}"; do
    fuser -s -k -KILL "$root" 2>/dev/null || true
  done
  for ((i = ${#CHROOT_MOUNTS[@]} - 1; i >= 0; i--)); do
    umount "${CHROOT_MOUNTS[i]}" 2>/dev/null || umount -l "${CHROOT_MOUNTS[i]}" 2>/dev/null ||
      echo "${0##*/}: could not unmount ${CHROOT_MOUNTS[i]}" >&2
  done
  CHROOT_MOUNTS=()
  CHROOT_ROOTS=()
}

# True when nothing is mounted at or below DIR.
chroot_nothing_mounted_below() {
  ! awk -v p="$1" 'index($2, p) == 1' /proc/self/mounts | grep -q .
}
