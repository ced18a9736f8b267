// Package audit keeps an organization's audit trail: one entry per
// administrative change, saying who made it (the token's subject, kind and
// role), when, from where (the client address as the API sees it, after
// http.trust_forwarded_for), what (an action such as "connector.update"
// on a target), and the state before and after with secrets redacted.
//
// # When an entry is written
//
// A change whose service runs in one transaction records its entry in that
// transaction (RecordTx), so the change and its entry commit or roll back
// together: the action modes of the organization and of an automation,
// quiet hours and do-not-contact (internal/domain/settings), and the Slack
// approval settings (internal/domain/relay/slackapproval). Every other
// change is recorded right after it succeeded, by the HTTP layer
// (Service.Record): credentials, connectors and their tool reviews,
// databases, webhooks, dead-letter replays and discards, and the
// organization's pause and resume. A failure to record
// such an entry is logged at error level; the change stands.
//
// # Recording from other code
//
// Token revocation and key rotation (internal/domain/sealed, for
// `outboxd secrets rotate`, actor kind KindOperator) record through the
// Recorder interface: RecordTx in the transaction of its change, or
// Record right after it. Within an API request the context carries the
// caller (WithActor, set by internal/api for every authenticated request);
// elsewhere the Change names its Actor, for example the CLI's:
//
//	trail := audit.New(ownerPool)
//	err := trail.RecordTx(ctx, tx, &audit.Change{
//		Org: org, Actor: &audit.Actor{Subject: "operator", Kind: "operator"},
//		Action: "secrets.rotate", TargetType: "secrets_key", TargetID: keyID,
//		After: map[string]any{"resealed": n},
//	})
//
// A service that records in its own transaction and is also called
// without an API caller uses Internal(ctx, by) as the Change's Actor.
//
// # The chain
//
// Each organization's entries are numbered from 1 without gaps (seq) and
// chained: an entry stores the previous entry's hash (prev_hash, "" for
// the first) and its own, the SHA-256 of Canonical(entry) in hex, which
// covers every field but the hash itself. Writers of one organization take
// a transaction-scoped advisory lock on its chain before reading the head,
// so concurrent changes append one after the other. The API role may
// insert and read entries but neither update nor delete them (migration
// 029). Verify checks an export (JSON lines, oldest first) offline: a
// deleted, altered, inserted or reordered entry breaks the chain.
//
// # Sources
//
// Each entry also records the sources it concerns (Change.Sources, the
// column sources of migration 049): a decision's invocation source, a
// credential's integration, a connector's or database's source id, a
// grant's, the dead letters' of a retry or discard, and for action modes
// the sources whose overrides the replacement changed, the only overrides
// its before and after show (internal/domain/settings; earlier entries
// show every override of the scope and name every source their keys
// name). An entry of the whole organization (tokens, revocations,
// settings, webhooks, the pause, approval policy, key rotation,
// retention) names none. A listing with Filter.Sources (a token's sources
// claim) shows the entries that name a source and none outside the
// claim, so an entry never shows a token another source's state. The sources are not hashed (Canonical is
// unchanged, so chains written before verify as they did) nor exported;
// an entry a narrowed token lists still hashes to its hash, but its
// prev_hash may be that of an entry it is not shown. The export, the
// whole chain, is served to tokens without a claim only.
//
// # Retention
//
// Retention (internal/domain/retention, retention.audit_entries) deletes
// the oldest entries through Pruner: only from the front of a chain, and
// in the same transaction it moves the organization's anchor (migration
// 036: the first kept seq and the hash of the last deleted entry) and
// appends an audit.prune entry. An export starts with the anchor's line
// (AnchorLine) and VerifyExport checks the chain from it; the anchor itself
// cannot be checked from an export alone.
//
// # Redaction
//
// Before and after are built by the callers from the same views the API
// answers with, which never carry a credential, a connector or database
// secret or a webhook secret; Redact then replaces the value of any key
// that names a secret ("secret", "token", "password", ...) as a second
// line of defence. A change of a secret shows as a flag
// ("secret_changed": true), never as a value.
package audit
