// Package webhook delivers invocation notices to the organization's HTTP
// endpoints, signed as Standard Webhooks (https://www.standardwebhooks.com):
// endpoint CRUD, the relay consumer that turns notices into deliveries,
// and the delivery job. The endpoints and deliveries are stored by
// webhookstore.
//
// Deliveries come from invocation_events through the relay (package
// relay): for the notices after the webhook cursor it inserts a delivery
// row and its River job for every enabled endpoint that wants the notice,
// and moves the cursor, all in one transaction. An event that rolled back
// is never delivered, an event that committed is relayed exactly once even
// if a process dies mid-way, and the transitions of
// internal/domain/invocation stay one statement each with no webhook
// lookup on their path.
package webhook
