package mcpfront

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	outboxauth "github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/policy"
)

// tool is one action of the caller's catalog as an MCP tool.
type tool struct {
	name   string
	action catalog.AvailableAction
	source string // the source's display name
}

// tools lists the caller's catalog as tools, in the catalog's order, with
// deny-mode actions kept (callers of listTools leave them out; a call of
// one is answered with the denial).
func (s *Server) tools(ctx context.Context, c *outboxauth.Claims) ([]tool, error) {
	listing, err := s.catalog.Available(ctx, caller(c))
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(listing.Sources))
	for _, st := range listing.Sources {
		names[st.Source] = cmp.Or(st.Name, st.Source)
	}
	out := make([]tool, 0, len(listing.Actions))
	shared := map[string]int{}
	for _, a := range listing.Actions {
		name := ToolName(a.Source, a.Action)
		shared[name]++
		out = append(out, tool{name: name, action: a, source: names[a.Source]})
	}
	// A name several tools were given ("get.item" and "get_item", two long
	// names cut alike) is kept by the one whose action it spells as it is;
	// each other takes a suffix of its own, so that every tool can be
	// called, under a name that depends on the catalog and not its order.
	for i := range out {
		a := out[i].action
		if shared[out[i].name] > 1 && !spellsAction(out[i].name, a.Action) {
			out[i].name = uniqueName(out[i].name, a.Source, a.Action)
		}
	}
	return out, nil
}

// spellsAction reports whether name ends with action as it is: ToolName
// neither replaced a character of it nor cut it.
func spellsAction(name, action string) bool {
	return strings.HasSuffix(name, "."+action)
}

// uniqueName is name with a suffix made of a digest of source and action,
// within MCP's 128 characters.
func uniqueName(name, source, action string) string {
	sum := sha256.Sum256([]byte(source + "\x00" + action))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return name[:min(len(name), 128-len(suffix))] + suffix
}

// ToolName is the MCP tool name of a source's action: "<source>.<action>"
// with every character MCP does not allow in a name (anything but
// letters, digits, "_", "-" and ".") replaced by "_", so the connector
// "connector:3f…" gives "connector_3f….<tool>". Calls map a name back
// through the caller's catalog, never by parsing it.
func ToolName(source, action string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
				return r
			}
			return '_'
		}, s)
	}
	name := clean(source) + "." + clean(action)
	if len(name) > 128 {
		name = name[:128]
	}
	return name
}

// listTools is tools/list: the caller's catalog without its deny-mode
// actions, a page at a time (the cursor is the next page's offset). A
// session's client that lists is told when its list changes.
func (s *Server) listTools(ctx context.Context, c *outboxauth.Claims, req *mcp.ListToolsRequest) (*mcp.ListToolsResult, error) {
	start := 0
	if p := req.Params; p != nil && p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "cursor: not a cursor this server gave"}
		}
		start = n
	}
	all, err := s.listed(ctx, c)
	if err != nil {
		return nil, err
	}
	if s.watchers != nil && req.Session != nil && req.Session.ID() != "" {
		s.watchers.saw(req.Session, c, digestOf(all))
	}
	// A cursor past the end (the list shrank) gives an empty last page;
	// end is counted from start, which cannot overflow.
	start = min(start, len(all))
	end := start + min(s.pageSize, len(all)-start)
	out := &mcp.ListToolsResult{Tools: all[start:end], Cacheable: perCaller}
	if end < len(all) {
		out.NextCursor = strconv.Itoa(end)
	}
	return out, nil
}

// listed is the caller's whole tool list: its catalog without deny-mode
// and disabled actions, then outboxd_wait.
func (s *Server) listed(ctx context.Context, c *outboxauth.Claims) ([]*mcp.Tool, error) {
	tools, err := s.tools(ctx, c)
	if err != nil {
		return nil, err
	}
	all := []*mcp.Tool{}
	seen := map[string]bool{}
	for _, t := range tools {
		if t.action.Mode == policy.ModeDeny || t.action.Disabled || seen[t.name] {
			continue
		}
		seen[t.name] = true
		all = append(all, describe(t))
	}
	return append(all, waitTool), nil
}

// describe renders a catalog action as an MCP tool.
func describe(t tool) *mcp.Tool {
	a := t.action
	var how string
	switch a.Mode {
	case policy.ModeRequireApproval:
		how = "A human must approve each call before it runs; the call waits for the decision."
	default:
		how = "Runs at once."
	}
	title := t.source + ": " + a.Action
	annotations := &mcp.ToolAnnotations{
		Title:          title,
		ReadOnlyHint:   a.RiskTier == policy.TierR0 || a.RiskTier == policy.TierR1,
		IdempotentHint: a.Delivery == "exactly_once",
	}
	if a.RiskTier == policy.TierR3 || a.RiskTier == policy.TierR4 {
		destructive := true
		annotations.DestructiveHint = &destructive
	}
	tool := &mcp.Tool{
		Name:        t.name,
		Title:       title,
		Description: strings.TrimSpace(fmt.Sprintf("%s\n\nRisk tier %s (%s). %s", strings.TrimSpace(a.Description), a.RiskTier, a.RiskLevel, how)),
		InputSchema: a.Params,
		Annotations: annotations,
	}
	if len(a.Output) > 0 {
		tool.OutputSchema = a.Output
	}
	return tool
}
