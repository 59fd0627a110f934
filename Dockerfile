# memfsd's image: a static binary in an image with no shell (FROM scratch),
# the CA certificates, the non-root user memfsd (65532:65532), memfsd as
# the entrypoint. docs/operator.md "Deploy".
#
#   docker build -t memfsd --build-arg VERSION=$(git describe --always --dirty) .
#
# scripts/image.sh builds the same image with buildah and no registry: it
# stages the files on the host (scripts/image-rootfs.sh, as the build stage
# below does) and gives them as ROOTFS, so the golang image is not pulled.
ARG GO_IMAGE=docker.io/library/golang:1.26-bookworm
ARG ROOTFS=build

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY . .
RUN scripts/image-rootfs.sh /out

FROM ${ROOTFS} AS rootfs

FROM scratch
ARG VERSION=dev
ARG REVISION=unknown
COPY --from=rootfs /out/rootfs/ /
COPY --from=rootfs --chown=65532:65532 /out/home /memfsd
USER 65532:65532
ENV PATH=/usr/local/bin \
    MEMFSD_HOME=/memfsd \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
WORKDIR /memfsd
ENTRYPOINT ["/usr/local/bin/memfsd"]
CMD ["run"]
LABEL org.opencontainers.image.title="memfsd" \
      org.opencontainers.image.description="Keeps an AI agent's memory folder in git" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/memfsd/memfsd"
