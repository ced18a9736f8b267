# syntax=docker/dockerfile:1

# Build a static outboxd binary.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/outboxd ./cmd/outboxd

# Run it as an unprivileged user on a minimal image with CA certificates
# (providers are reached over TLS).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/outboxd /usr/local/bin/outboxd
COPY configs/outboxd.example.yaml /etc/outboxd/outboxd.example.yaml
USER nonroot:nonroot
ENV OUTBOXD_HTTP_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["outboxd"]
CMD ["serve"]
