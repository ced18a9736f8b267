// Package policy holds the pure decision and data-hygiene rules that every
// invocation passes through before anything is stored or executed.
//
// # Modes
//
// Resolve runs the mode cascade: an automation override wins over an
// organization default, which wins over a default inferred from the action
// definition's risk hint (read/R0/R1 allow, write/R2 require approval,
// danger/R3/R4 deny, anything missing or unrecognised requires approval). A
// stored mode that is not one of the three valid modes denies, so a corrupt
// or future value can never widen access. A request may then only tighten the
// result (a risk hint or approval=required on the envelope), and
// ApplyDriftGuard downgrades allow to require_approval for connector tools
// whose definition changed since an admin last reviewed it; deny is never
// relaxed.
//
// # Redaction and truncation
//
// Redact replaces the values of sensitive keys (token, secret, password,
// authorization, api_key, apikey) at any depth of a JSON document, and
// RedactString scrubs free-text error messages. Truncate prunes a document
// structurally (trailing array elements, the largest object members, the tail
// of long strings) so that what is stored is always valid JSON of bounded
// size, marked with "_truncated": true. Results are redacted first and
// truncated second.
//
// # Hashing
//
// DefinitionHash fingerprints an MCP tool's input schema for drift detection.
// It ignores "description", "default" and "enum", which commonly carry
// dynamic data and would otherwise report drift that changes nothing about
// what the tool does.
package policy
