package slackapproval

import (
	"strings"

	"github.com/outboxd/outboxd/internal/domain/intent"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// intentBlocks show on an approval request the first characters of the
// intent digest the approval approves and, for a request asked again (an
// intent_changed event), what changed since the last approval. Another
// request for the same invocation is another message; the latest is the
// one its decision updates.
func intentBlocks(inv *invocation.Invocation) []any {
	if inv.IntentDigest == "" {
		return nil
	}
	text := "Intent `" + intent.Prefix(inv.IntentDigest) + "`"
	if len(inv.IntentChanges) > 0 {
		text = "*Asked again: " + strings.Join(inv.IntentChanges, ", ") + " since the last approval.* " + text
	}
	if len(inv.ParamsOriginal) > 0 {
		text += " (params edited by an approver)"
	}
	return []any{map[string]any{"type": "section", "text": mrkdwn(text)}}
}
