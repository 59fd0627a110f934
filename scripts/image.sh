#!/usr/bin/env bash
# Builds memfsd's image on this machine from the repository alone, with
# Debian's buildah (apt-get install buildah): no registry, no daemon.
# The files are staged on the host (scripts/image-rootfs.sh: a static
# CGO_ENABLED=0 binary, the host's CA bundle, passwd/group) and the
# Dockerfile's last stage is built from them (ROOTFS), so `docker build .`
# and this script make the same image. Writes:
#   bin/image/memfsd-oci/           an OCI image layout (tag $VERSION)
#   bin/image/memfsd-$VERSION.tar   the same as an oci-archive
#                                   (podman load -i / skopeo copy oci-archive:...)
# and tags localhost/memfsd:$VERSION and :latest (not with NO_LATEST=1) in
# buildah's storage.
# Env: VERSION (default git describe), STORAGE_DRIVER (default vfs: works
# in a container without overlay), OUT (default bin/image).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v buildah >/dev/null || { echo "image.sh: buildah is not installed: apt-get install buildah" >&2; exit 1; }
version=${VERSION:-$(git describe --always --dirty 2>/dev/null || echo dev)}
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
out=${OUT:-bin/image}
bh=(buildah --storage-driver "${STORAGE_DRIVER:-vfs}")
mkdir -p "$out"
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"; [ -n "${rootfs_ctr:-}" ] && "${bh[@]}" rm "$rootfs_ctr" >/dev/null 2>&1 || true' EXIT

scripts/image-rootfs.sh "$ctx/out"
# The staged files as the image the Dockerfile's "rootfs" stage names.
rootfs_ctr=$("${bh[@]}" from scratch)
"${bh[@]}" copy "$rootfs_ctr" "$ctx/out" /out >/dev/null
"${bh[@]}" commit -q "$rootfs_ctr" localhost/memfsd-rootfs:"$version" >/dev/null
"${bh[@]}" rm "$rootfs_ctr" >/dev/null; rootfs_ctr=

# An empty context: the last stage copies from ROOTFS only.
mkdir "$ctx/empty"
"${bh[@]}" bud --isolation chroot --layers=false -q \
  --build-arg ROOTFS=localhost/memfsd-rootfs:"$version" \
  --build-arg VERSION="$version" --build-arg REVISION="$revision" \
  -f "$PWD/Dockerfile" -t localhost/memfsd:"$version" "$ctx/empty" >/dev/null
# (buildah 1.28 leaves the "rootfs" stage's container: -f removes it.)
"${bh[@]}" rmi -f localhost/memfsd-rootfs:"$version" >/dev/null
[ -n "${NO_LATEST:-}" ] || "${bh[@]}" tag localhost/memfsd:"$version" localhost/memfsd:latest

rm -rf "$out/memfsd-oci" "$out/memfsd-$version.tar"
"${bh[@]}" push -q localhost/memfsd:"$version" oci:"$out/memfsd-oci:$version"
"${bh[@]}" push -q localhost/memfsd:"$version" oci-archive:"$out/memfsd-$version.tar:$version"
echo "image localhost/memfsd:$version"
echo "oci layout $out/memfsd-oci (tag $version), archive $out/memfsd-$version.tar ($(du -h "$out/memfsd-$version.tar" | cut -f1))"
"${bh[@]}" inspect --type image --format '{{.OCIv1.Config.User}} {{.OCIv1.Config.Entrypoint}} {{.OCIv1.Config.Labels}}' localhost/memfsd:"$version"
