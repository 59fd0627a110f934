// Package deploytest checks what an operator deploys (issue 40): the
// image scripts/image.sh builds with buildah (its config and files read
// from the OCI layout, and, where buildah can run it, a write and a turn
// against a loopback git server), the Kubernetes example's flags, and the
// systemd unit. It has tests only.
package deploytest
