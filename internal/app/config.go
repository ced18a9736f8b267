package app

import "time"

// Defaults of the Config fields app itself owns; the configuration layer
// (cmd/outboxd) reads them, and those of the packages app wires from their
// WithDefaults.
const (
	// DefaultHTTPAddr is http.addr's default.
	DefaultHTTPAddr = "127.0.0.1:8080"
	// DefaultTokenSource is tokens.source's default: the encrypted
	// credential store. An empty TokenSource means the same.
	DefaultTokenSource = "store"
	// DefaultShutdownTimeout is ShutdownTimeout's default.
	DefaultShutdownTimeout = 30 * time.Second
)
