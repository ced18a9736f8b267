package mcpfront

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// withEdits tells the agent that a human changed its request before
// approving: the result's _meta holds outboxd/edited (true) and
// outboxd/edits (who changed what, the diff of the redacted params), and
// a text block says it in words. The structured content, which a tool's
// output schema may describe, stays the provider's.
func withEdits(inv invocation.Invocation, res *mcp.CallToolResult) *mcp.CallToolResult {
	if len(inv.ParamsOriginal) == 0 || res == nil {
		return res
	}
	var edits any
	if json.Unmarshal(inv.Edits, &edits) != nil {
		edits = []any{}
	}
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	res.Meta["outboxd/edited"] = true
	res.Meta["outboxd/edits"] = edits
	note, _ := json.Marshal(map[string]any{
		"edited":          true,
		"message":         "a human changed your params before approving; the call ran with the edited params",
		"params":          inv.Params,
		"params_original": inv.ParamsOriginal,
		"edits":           edits,
	})
	res.Content = append(res.Content, &mcp.TextContent{Text: string(note)})
	return res
}

// denial is why an invocation was denied, for the agent: a human's words
// when they gave any, else the kind of denial.
func denial(inv invocation.Invocation) string {
	if inv.ApprovedBy != nil && inv.Error != nil && *inv.Error != "" {
		return *inv.Error
	}
	return deref(inv.DeniedReason)
}
