// Package slackapproval is the human side of unattended runs in Slack: a
// Block Kit message with Approve / Approve & always allow / Deny buttons
// for every invocation that enters pending, the signed interactivity
// endpoint that turns a click into the same approve or deny transition as
// the HTTP API (Deny first asks the reason the agent is told, in a modal:
// denyform.go), and the update of the message when the invocation is
// decided, wherever that happened. The settings and messages are stored
// by slackapprovalstore.
//
// Messages come from invocation_events through the relay (package relay),
// whose consumer Slack approvals are: an approval request that rolled back
// is never posted, and one that committed is posted once.
package slackapproval
