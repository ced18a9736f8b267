// Package httpsource holds the building blocks for sources that call a
// provider's HTTP API: checking a configured base URL, a client with a
// transport of its own, reading a bounded answer, reading Retry-After,
// turning transport failures into executors.Error while keeping the token
// out of every error text, classifying a REST provider's non-2xx
// answers (Statuses: 429 and 5xx retryable, the rest final, the
// provider's own explanation quoted without the token), and sending one
// call to a JSON REST API with all of these (REST.Do).
//
// What is provider-specific stays with each source: its headers, the
// wording of the refusals it explains (Statuses.Hints), how its error
// bodies are read, rate limits beyond Retry-After, paging, and which calls
// are safe to retry.
package httpsource
