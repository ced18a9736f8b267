package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/outboxd/outboxd/executors"
)

// Preview renders a tool call as each argument with its description in
// the tool's input schema (read from the connector's cached tool list;
// the call is not made). An argument the schema does not describe is
// shown with a note; a required one missing is noted too.
func (s *source) Preview(ctx context.Context, actionID string, params json.RawMessage, ec executors.ExecContext) (*executors.Preview, error) {
	sc := newScrubber(s.conn, ec.Token)
	tools, err := s.client.ListTools(ctx, s.conn, ec.Token)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(tools, func(t Tool) bool { return t.Name == actionID })
	if i < 0 {
		return nil, sc.errorf(CodeUnknownAction, false, executors.ErrUnknownAction, "connector %s has no tool %q", s.conn.ID, actionID)
	}
	tool := tools[i]
	args, err := toolArguments(params)
	if err != nil {
		return nil, sc.errorf(CodeInvalidParams, false, nil, "%v", err)
	}
	var values map[string]json.RawMessage
	if err := json.Unmarshal(args, &values); err != nil {
		return nil, sc.errorf(CodeInvalidParams, false, nil, "params must be a JSON object")
	}
	var schema inputSchema
	_ = json.Unmarshal(tool.InputSchema, &schema) // a schema without properties describes nothing

	title := cmpOr(tool.Title, tool.Name)
	out := &executors.Preview{Kind: executors.PreviewToolArgs, Title: fmt.Sprintf("%s on %s", title, s.conn.Name), Text: tool.Description}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	// Schema order is lost in a Go map; arguments are shown by name.
	slices.Sort(names)
	var undescribed []string
	for _, n := range names {
		prop, ok := schema.Properties[n]
		if !ok {
			undescribed = append(undescribed, n)
		}
		out.Fields = append(out.Fields, executors.PreviewField{Name: n, Value: argText(values[n]), Description: cmpOr(prop.Description, prop.Title)})
	}
	if len(undescribed) > 0 {
		out.Notes = append(out.Notes, "the tool's schema does not describe "+strings.Join(undescribed, ", "))
	}
	var missing []string
	for _, r := range schema.Required {
		if _, ok := values[r]; !ok {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		out.Notes = append(out.Notes, "required by the tool's schema but not given: "+strings.Join(missing, ", "))
	}
	return out, nil
}

// inputSchema is the part of a tool's input schema a preview reads.
type inputSchema struct {
	Properties map[string]struct {
		Description string `json:"description"`
		Title       string `json:"title"`
	} `json:"properties"`
	Required []string `json:"required"`
}

// argText shows a string argument as its text, any other as its JSON.
func argText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
