// Package httpsource holds the building blocks for sources that call a
// provider's HTTP API: checking a configured base URL, a client with a
// transport of its own, reading a bounded answer, reading Retry-After, and
// turning transport failures into executors.Error while keeping the token
// out of every error text.
//
// It decides nothing provider-specific: how an answer's status and body are
// classified, and which calls are safe to retry, stay with each source.
package httpsource
