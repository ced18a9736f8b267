// Package mcp is the MCP connector archetype of the action source seam: it
// lists and calls the tools of an organization's remote MCP servers with the
// official Go SDK over the streamable HTTP transport.
//
// Every list or call is stateless from outboxd's side: a fresh SDK client
// and session are opened, used and closed, and a session the server lost
// mid-way (HTTP 404) is retried once with a fresh initialize. Tool lists are
// cached per connector for a few minutes, keyed by the connector's URL and
// auth scheme so an edited connector misses.
//
// A connector's secret is never stored in this package's types: it is
// passed per call (ExecContext.Token for a Source), injected as a header by
// the HTTP transport only towards the connector's own origin, and scrubbed
// from every error.
//
// Unless Config.AllowPrivateNetworks is set, connectors cannot reach
// loopback, private, link-local, metadata or other internal addresses: the
// check runs on the resolved address of every connection, so DNS names and
// redirects cannot get around it.
//
// Each tool becomes an executors.Definition whose params schema is the
// tool's input schema. Its risk hint comes from the connector's risk policy
// override, then the server's annotations (destructiveHint before
// readOnlyHint), then the policy's default, then "write". Tool.Hash is the
// policy.DefinitionHash of the input schema, for the drift guard.
//
// The connectors themselves (their CRUD, the review of their tools, and
// their registration with the catalog) are package connectors; their rows
// are stored by mcpstore.
package mcp
