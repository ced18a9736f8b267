# syntax=docker/dockerfile:1

# Build a static outboxd binary, the way `make build` does (CGO_ENABLED=0,
# -trimpath), stripped. The tag is the go line of go.mod: the official Go
# images set GOTOOLCHAIN=local, so an older Go there refuses to build
# instead of downloading the toolchain go.mod asks for.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The migrations and the web console (console/dist, committed) are
# embedded in the binary: the image needs no other file.
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/outboxd ./cmd/outboxd

# Run it as an unprivileged user (nonroot, uid 65532) on a minimal image
# with CA certificates (providers are reached over TLS; the zone database
# of quiet hours is built into the binary). It has no shell and no curl,
# hence no HEALTHCHECK: probe
# GET /healthz (alive) and GET /readyz (database reachable and migrated)
# from the orchestrator. Run `outboxd migrate up` (same image, command
# `migrate up`) before `serve`.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/outboxd /usr/local/bin/outboxd
COPY configs/outboxd.example.yaml /etc/outboxd/outboxd.example.yaml
USER nonroot:nonroot
ENV OUTBOXD_HTTP_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["outboxd"]
CMD ["serve"]
