#!/usr/bin/env bash
# The image's files, staged into DIR/rootfs (used by scripts/image.sh on
# the host and by the Dockerfile's build stage, so both images hold the
# same files): a static memfsd (CGO_ENABLED=0), the CA certificates, and
# /etc/passwd, /etc/group naming the non-root user memfsd (65532:65532,
# distroless's "nonroot") and DIR/home, the empty home the Dockerfile gives
# that user at /memfsd. No shell, no libc, nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/image-rootfs.sh DIR}
ca=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ -s "$ca" ] || { echo "image-rootfs: no CA bundle at $ca: install ca-certificates (apt-get install ca-certificates) or set CA_BUNDLE" >&2; exit 1; }
rm -rf "$out/rootfs" "$out/home"
mkdir -p "$out/rootfs/usr/local/bin" "$out/rootfs/etc/ssl/certs" "$out/rootfs/tmp" "$out/home"
CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags='-s -w' -o "$out/rootfs/usr/local/bin/memfsd" ./cmd/memfsd
cp "$ca" "$out/rootfs/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\nmemfsd:x:65532:65532:memfsd:/memfsd:/sbin/nologin\n' >"$out/rootfs/etc/passwd"
printf 'root:x:0:\nmemfsd:x:65532:\n' >"$out/rootfs/etc/group"
chmod 0755 "$out/rootfs/usr/local/bin/memfsd"
chmod 0644 "$out/rootfs/etc/passwd" "$out/rootfs/etc/group" "$out/rootfs/etc/ssl/certs/ca-certificates.crt"
chmod 1777 "$out/rootfs/tmp"
