# Sourced by ci/test_deb.sh and ci/test_bootstrap.sh: a clean Debian 12 (bookworm, minbase) in a
# temporary directory, to install and run things in with chroot. After `debian_root NAME`:
# $root is that directory (removed, its mounts undone, on exit), `in_root CMD...` runs CMD there
# with a clean environment, and `step TEXT` prints a step. The minbase root is debootstrapped once
# and cached as a tarball in ${LEDGERDIFF_BOOTSTRAP_CACHE:-/var/tmp/ledgerdiff-bootstrap} (delete it
# to re-debootstrap). Needs root and the Debian archive (DEBIAN_MIRROR, default deb.debian.org).
step() { echo "== $*"; }
in_root() { chroot "$root" env -i PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
debian_root() {
  local name=$1 mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
  local cache=${LEDGERDIFF_BOOTSTRAP_CACHE:-/var/tmp/ledgerdiff-bootstrap}
  [[ $(id -u) -eq 0 ]] || { echo "$name: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
  command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; }
  root=$(mktemp -d "${TMPDIR:-/tmp}/ledgerdiff-debian12-XXXXXX")
  trap debian_root_remove EXIT
  chmod 0755 "$root"  # it becomes /: the server user must traverse it
  if [[ -s "$cache/bookworm-minbase.tar" ]]; then
    step "Debian 12 minbase from $cache/bookworm-minbase.tar"
    tar -C "$root" -xf "$cache/bookworm-minbase.tar"
  else
    step "debootstrap bookworm (minbase) into $root"
    debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
      { tail -20 "$root.debootstrap.log"; rm -f "$root.debootstrap.log"; exit 2; }
    rm -f "$root.debootstrap.log"
    mkdir -p "$cache" && tar -C "$root" -cf "$cache/bookworm-minbase.tar.part" . &&
      mv "$cache/bookworm-minbase.tar.part" "$cache/bookworm-minbase.tar"
  fi
  mount -t proc proc "$root/proc"
  mkdir -p "$root/dev/shm" && mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
  # No daemons in the chroot: postgresql-common's own cluster must not start (ledgerdiff never uses it).
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" && chmod +x "$root/usr/sbin/policy-rc.d"
}
debian_root_remove() {
  [[ -n "${root:-}" && -d "$root" ]] || return 0
  for m in dev/shm proc; do mountpoint -q "$root/$m" && umount -l "$root/$m"; done
  rm -rf --one-file-system "$root"
}
