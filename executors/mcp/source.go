package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/policy"
)

// SourcePrefix starts the source id of every connector: "connector:<uuid>".
const SourcePrefix = "connector:"

// MetaIdempotencyKey is the request _meta key carrying the invocation's
// idempotency key on tools/call, for servers that deduplicate.
const MetaIdempotencyKey = "idempotency_key"

// SourceID returns the source id of the connector with the given id.
func SourceID(connectorID uuid.UUID) string {
	return SourcePrefix + connectorID.String()
}

// ParseSourceID returns the connector id in a source id, and false when
// sourceID is not a connector's.
func ParseSourceID(sourceID string) (uuid.UUID, bool) {
	rest, ok := strings.CutPrefix(sourceID, SourcePrefix)
	if !ok {
		return uuid.Nil, false
	}
	id, err := uuid.Parse(rest)
	if err != nil || id.String() != rest {
		return uuid.Nil, false
	}
	return id, true
}

// Source returns the action source of conn: its tools become actions whose
// ids are tool names and whose params schemas are the tools' input schemas.
// The source keeps a copy of conn; ExecContext.Token must carry the
// resolved connector secret.
func (c *Client) Source(conn *Connector) executors.Source {
	return &source{client: c, conn: conn.clone()}
}

type source struct {
	client *Client
	conn   *Connector
}

func (s *source) ID() string { return SourceID(s.conn.ID) }

// ListActions lists the connector's tools through the client's cache.
func (s *source) ListActions(ctx context.Context, ec executors.ExecContext) ([]executors.Definition, error) {
	tools, err := s.client.ListTools(ctx, s.conn, ec.Token)
	if err != nil {
		return nil, err
	}
	defs := make([]executors.Definition, len(tools))
	for i, t := range tools {
		defs[i] = t.definition()
	}
	return defs, nil
}

// Execute calls a tool with params as its arguments. The tool must be in
// the connector's (cached) tool list. A result flagged isError fails
// without retry; transport failures, timeouts and 5xx answers are
// retryable; see classify for the rest.
func (s *source) Execute(ctx context.Context, actionID string, params json.RawMessage, ec executors.ExecContext) (executors.Result, error) {
	sc := newScrubber(s.conn, ec.Token)

	tools, err := s.client.ListTools(ctx, s.conn, ec.Token)
	if err != nil {
		return executors.Result{}, err
	}
	found := false
	for _, t := range tools {
		if t.Name == actionID {
			found = true
			break
		}
	}
	if !found {
		return executors.Result{}, sc.errorf(CodeUnknownAction, false, executors.ErrUnknownAction,
			"connector %s has no tool %q", s.conn.ID, actionID)
	}

	args, err := toolArguments(params)
	if err != nil {
		return executors.Result{}, sc.errorf(CodeInvalidParams, false, nil, "%v", err)
	}
	call := &mcpsdk.CallToolParams{Name: actionID, Arguments: args}
	if ec.IdempotencyKey != "" {
		call.Meta = mcpsdk.Meta{MetaIdempotencyKey: ec.IdempotencyKey}
	}

	var res *mcpsdk.CallToolResult
	what := fmt.Sprintf("calling tool %q", actionID)
	err = s.client.withSession(ctx, s.conn, ec.Token, s.client.callTimeout, what, func(ctx context.Context, cs *mcpsdk.ClientSession) error {
		var err error
		res, err = cs.CallTool(ctx, call)
		return err
	})
	var e *executors.Error
	if errors.As(err, &e) && e.Code == CodeResponseTooLarge {
		// Not retried, and the agent reading it should not call again
		// blindly either: the server answered, so the tool likely ran.
		e.Message += "; the tool may have run: check its effect before calling it again"
	}
	if err != nil {
		return executors.Result{}, err
	}
	if res.IsError {
		return executors.Result{}, sc.errorf(CodeToolError, false, nil, "%s", toolErrorMessage(res))
	}

	data, err := resultData(res)
	if err != nil {
		// The call ran; its answer could not be re-encoded, so running it
		// again would not help.
		return executors.Result{}, sc.errorf(CodeProtocolError, false, nil, "%s: encoding the result: %v", what, err)
	}
	// The result is stored for the agent to read: the secrets of the
	// connector's URL, which only admins read, leave it as they leave
	// errors (the worker redacts the credential it resolved, not these).
	return executors.Result{Data: policy.Redact(data, sc...)}, nil
}

// toolArguments checks that params are one JSON object, as tool arguments
// must be; empty params mean no arguments.
func toolArguments(params json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(params)
	if len(trimmed) == 0 {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &obj) != nil {
		return nil, fmt.Errorf("params must be a JSON object")
	}
	return json.RawMessage(trimmed), nil
}

// toolErrorMessage joins the text content of a failed call: that is where
// tools explain their failures.
func toolErrorMessage(res *mcpsdk.CallToolResult) string {
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcpsdk.TextContent); ok && strings.TrimSpace(t.Text) != "" {
			texts = append(texts, t.Text)
		}
	}
	if len(texts) == 0 {
		return "the tool reported an error without a message"
	}
	return strings.Join(texts, "\n")
}

// callResult is the stored result of a call: the content list and the
// structured content, under snake_case keys like the rest of the API.
type callResult struct {
	Content           []mcpsdk.Content `json:"content"`
	StructuredContent any              `json:"structured_content,omitempty"`
}

// resultData encodes res as a callResult.
func resultData(res *mcpsdk.CallToolResult) (json.RawMessage, error) {
	content := res.Content
	if content == nil {
		content = []mcpsdk.Content{}
	}
	return json.Marshal(callResult{content, res.StructuredContent})
}
