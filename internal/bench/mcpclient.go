package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// mcpClient is an MCP client over Streamable HTTP that does only what the
// bench needs, at the cost of a plain HTTP client: a 2025-11-25 session,
// tools/call requests in it, and each answer read from its JSON or SSE
// body. The REST phases' clients are plain HTTP clients, so the MCP
// phase's must not spend the CPU of a general-purpose client in the same
// process either: the bench measures the server. The front door's
// conformance is tested with the Go and TypeScript SDKs' clients
// (internal/api/mcp_test.go, mcp_ts_test.go).
type mcpClient struct {
	http    *http.Client
	url     string
	token   string
	session string
	nextID  int
	// lines is the buffer each SSE answer is read in: one per client, so
	// a call allocates no buffer of its own.
	lines []byte
}

// mcpProtocol is the protocol version the bench's clients speak: today's
// clients' (Claude Code, Cursor, the SDKs' released versions), with a
// session.
const mcpProtocol = "2025-11-25"

// connectMCP starts a session at url with token.
func connectMCP(ctx context.Context, hc *http.Client, url, token string) (*mcpClient, error) {
	c := &mcpClient{http: hc, url: url, token: token, lines: make([]byte, 0, 4<<10)}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := c.call(ctx, "initialize", map[string]any{
		"protocolVersion": mcpProtocol,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "outboxd-bench", "version": "1"},
	}, &res); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if res.ProtocolVersion != mcpProtocol {
		return nil, fmt.Errorf("initialize: the server answered protocol %q", res.ProtocolVersion)
	}
	if _, err := c.post(ctx, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	return c, nil
}

// callTool calls tool with args and the idempotency key, and fails when
// the call does not complete.
func (c *mcpClient) callTool(ctx context.Context, tool string, args any, key string) error {
	var res struct {
		IsError bool              `json:"isError"`
		Content []json.RawMessage `json:"content"`
	}
	if err := c.call(ctx, "tools/call", map[string]any{
		"name": tool, "arguments": args, "_meta": map[string]any{"idempotency_key": key},
	}, &res); err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("the call failed: %s", res.Content)
	}
	return nil
}

// close ends the session.
func (c *mcpClient) close(ctx context.Context) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
	if err != nil {
		return
	}
	c.header(req)
	if resp, err := c.http.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// call sends request method with params and decodes its result into out.
func (c *mcpClient) call(ctx context.Context, method string, params, out any) error {
	c.nextID++
	id := c.nextID
	resp, err := c.post(ctx, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var answer struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := c.readAnswer(resp, id, &answer.ID, &answer); err != nil {
		return err
	}
	if answer.Error != nil {
		return fmt.Errorf("JSON-RPC error %d: %s", answer.Error.Code, answer.Error.Message)
	}
	return json.Unmarshal(answer.Result, out)
}

// post sends one JSON-RPC message and returns the response, whose status
// it checked.
func (c *mcpClient) post(ctx context.Context, msg any) (*http.Response, error) {
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	c.header(req)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		text, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(text)))
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	return resp, nil
}

func (c *mcpClient) header(req *http.Request) {
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", mcpProtocol)
	}
}

// readAnswer decodes the response to request id into answer: the body
// itself when it is JSON, else the SSE event whose message has that id
// (progress notifications come before it). gotID is answer's id field.
func (c *mcpClient) readAnswer(resp *http.Response, id int, gotID *int, answer any) error {
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if media == "application/json" {
		return json.NewDecoder(resp.Body).Decode(answer)
	}
	if media != "text/event-stream" {
		return fmt.Errorf("unexpected content type %q", media)
	}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(c.lines[:0], 16<<20)
	var data []byte
	for lines.Scan() {
		line := lines.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimSpace(line[len("data:"):])...)
		case len(line) == 0 && len(data) > 0:
			*gotID = 0
			if err := json.Unmarshal(data, answer); err != nil {
				return err
			}
			if *gotID == id {
				return nil
			}
			data = data[:0]
		}
	}
	if err := lines.Err(); err != nil {
		return err
	}
	return errors.New("the stream ended without the answer")
}
