# The reach gateway as a container image: a static binary on an empty base,
# run as a user that is not root, its state in the volume /data.
#
#   docker build -t reach .
#   docker run --rm -p 7400:7400 -v reach-data:/data \
#       -v $PWD/reach.yaml:/etc/reach/reach.yaml:ro reach serve --config /etc/reach/reach.yaml --data /data
#
# Without auth: in its configuration, reach serves loopback addresses only,
# so a configuration that listens on 0.0.0.0:7400 (to be reached through -p)
# needs auth: (API keys from `reach keys create --data /data ...`, or JWTs).
# cmd/reach's TestDockerfile checks the properties said here.

# Build: a static binary, with cgo (the store on SQLite's C library,
# docs/STATE.md), linked statically; Go's own resolver and user lookup
# (netgo, osusergo) and no SQLite extension loading (dlopen), so that
# nothing needs the C library's dynamic parts.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
RUN CGO_ENABLED=1 go build -trimpath -tags osusergo,netgo,sqlite_omit_load_extension -ldflags "-s -w -linkmode external -extldflags -static -X github.com/agentreach/reach/internal/buildinfo.Version=${VERSION}" -o /out/reach ./cmd/reach
# The data folder, owned by the user the image runs as.
RUN mkdir -p /out/data && chown 65532:65532 /out/data

# Run: nothing but the binary, the CA certificates (for HTTPS upstreams,
# model endpoints and JWKS) and the data folder.
FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/reach /reach
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV HOME=/data
# As PID 1, reach serve does not run itself again to keep the Go runtime's
# monitor awake (a SIGTERM around that execve was lost): the setting it
# would add is set here.
ENV GODEBUG=schedtrace=2147483647
WORKDIR /data
VOLUME ["/data"]
EXPOSE 7400
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 CMD ["/reach", "health"]
ENTRYPOINT ["/reach"]
CMD ["serve", "--data", "/data"]
