package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/outboxd/outboxd/console"
	mcpsource "github.com/outboxd/outboxd/executors/mcp"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	outboxauth "github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/jsontext"
	"github.com/outboxd/outboxd/outbox"
)

// idempotencyMeta is the _meta key of a call's idempotency key.
const idempotencyMeta = "idempotency_key"

// callTool is tools/call: the call becomes an invocation through the
// outbox, exactly as a REST invoke of the sandbox token's session (or an
// envelope of the service token's automation), and its outcome a tool
// result. What the model should see (a denial, a provider failure, a
// limit, its token revoked) is a result with isError; a request that
// cannot be an invocation at all (an unknown tool, arguments that fail the
// schema) is a JSON-RPC error naming what is wrong.
func (s *Server) callTool(ctx context.Context, c *outboxauth.Claims, p *mcp.CallToolParamsRaw, cr callRequest) (*mcp.CallToolResult, error) {
	// The call waits sync_wait in all: an allow-mode invoke's own wait
	// (the outbox's, as over REST) counts in it.
	deadline := time.Now().Add(s.wait)
	// The token is sent back with each progress notification: only what
	// the protocol allows is.
	switch cr.token.(type) {
	case nil, string, float64:
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "_meta.progressToken must be a string or a number"}
	}
	if p.Name == waitTool.Name {
		return s.waitAgain(ctx, c, p.Arguments, cr)
	}
	args := p.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	// Text Postgres cannot store is refused as over REST, naming the field.
	if field, problem := jsontext.Problem(args); problem != "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "arguments." + field + ": " + problem}
	}
	key, err := idempotencyKey(p.Meta, cr.header.Get("Idempotency-Key"))
	if err != nil {
		return nil, err
	}
	// A name that is its source and action unchanged goes straight to the
	// outbox, which resolves it as it resolves a REST invoke; any other (a
	// connector's, whose source id has a ":") is looked up in the caller's
	// catalog, as is one the outbox does not know.
	source, action, direct := splitToolName(p.Name)
	// Subscribed before the invocation exists, the wait reads it only
	// when its end is heard.
	watch := s.outbox.Watch(ctx, c.Org)
	defer watch.Close()
	var inv invocation.Invocation
	if direct {
		inv, err = s.submit(ctx, c, watch, source, action, args, key)
	}
	if !direct || errors.Is(err, errs.NotFound) {
		found, lerr := s.lookup(ctx, c, p.Name)
		if lerr != nil {
			return nil, lerr
		}
		inv, err = s.submit(ctx, c, watch, found.action.Source, found.action.Action, args, key)
	}
	if err != nil {
		return s.refusal(err)
	}
	if !inv.Status.Terminal() {
		// A human decides, or the worker has not finished (an envelope is
		// not waited for by the outbox): wait as long as an allow-mode
		// invoke may.
		created := inv.ID == watch.ID
		if !created {
			// A retry with the same key: its creator's cancellation, in
			// any process, leaves what it waits for.
			done, err := s.waits.Start(ctx, c.Org, inv.ID)
			if err != nil {
				return nil, err
			}
			defer done()
		}
		latest, err := s.await(ctx, watch.Wait, inv, cr, deadline)
		if ctx.Err() != nil {
			// The client cancelled: the wait may have ended with the
			// cancellation's own error, before its read.
			if withdraws(created, key, cr) {
				s.withdraw(ctx, c, latest)
			}
			return nil, ctx.Err()
		}
		if err != nil {
			return nil, err
		}
		inv = latest
	}
	return s.outcome(inv, cr.origin), nil
}

// withdraws reports whether a call whose client cancelled it withdraws
// its invocation, unless another call waits on it in any API process (a
// retry with the same idempotency key, outboxd_wait: Waits):
//
//   - only the call that created the invocation (created) withdraws it: a
//     retry with the same key leaves it to the first call, which may
//     still wait on it in another process (its session's, or another
//     session's with the same token);
//   - a 2026-07-28 call with a key does not: the protocol's only
//     cancellation over HTTP is the request ending, which a connection
//     lost does too, and a client that sent a key said it retries, to get
//     the result of the one execution. Its unkeyed call, whose result no
//     retry could get, is withdrawn.
func withdraws(created bool, key string, cr callRequest) bool {
	return created && (key == "" || !sessionless(cr.header))
}

// withdraw cancels the invocation of a call its client cancelled while it
// waited, if it has not started and no other call waits on it; one
// already running or ended is left to finish, as a REST cancel would.
func (s *Server) withdraw(ctx context.Context, c *outboxauth.Claims, inv invocation.Invocation) {
	if inv.Status != invocation.StatusPending && inv.Status != invocation.StatusApproved {
		return
	}
	// The call's own context has ended: its values (the trace) are kept.
	ctx, cancel := context.WithTimeout(dbutil.WithOrg(context.WithoutCancel(ctx), c.Org), 10*time.Second)
	defer cancel()
	if _, err := s.outbox.Withdraw(ctx, c.Org, inv.ID.String(), c.Subject); err != nil && !errors.Is(err, errs.Conflict) {
		s.logger.WarnContext(ctx, "mcp: withdrawing a cancelled call", "invocation_id", inv.ID, "error", err)
	}
}

// splitToolName returns the source and action a tool name was made of,
// when ToolName changed neither.
func splitToolName(name string) (source, action string, ok bool) {
	source, action, ok = strings.Cut(name, ".")
	return source, action, ok && ToolName(source, action) == name
}

// lookup finds a tool of the caller's catalog by name.
func (s *Server) lookup(ctx context.Context, c *outboxauth.Claims, name string) (*tool, error) {
	tools, err := s.tools(ctx, c)
	if err != nil {
		return nil, err
	}
	for i := range tools {
		if tools[i].name == name {
			return &tools[i], nil
		}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q: tools/list lists the tools you may call", name)}
}

// submit records the call: an invoke of a sandbox token's session, or an
// envelope of a service token's automation.
func (s *Server) submit(ctx context.Context, c *outboxauth.Claims, watch *outbox.Watch, source, action string, args json.RawMessage, key string) (invocation.Invocation, error) {
	if c.Kind == outboxauth.KindService {
		return s.enqueue(ctx, c, watch, source, action, args, key)
	}
	return s.outbox.Invoke(ctx, &outbox.InvokeParams{
		OrganizationID: c.Org,
		SessionID:      c.SessionID,
		AutomationID:   c.AutomationID,
		UserID:         c.UserID,
		RequestedBy:    c.Subject,
		Sources:        c.Sources,
		Token:          c,
		Integration:    source,
		Action:         action,
		Params:         args,
		IdempotencyKey: key,
		Origin:         outbox.OriginMCP,
		Watch:          watch,
	})
}

// enqueue is a service token's call: an envelope of its automation, whose
// external id is the call's idempotency key, or a new one for a call
// without a key.
func (s *Server) enqueue(ctx context.Context, c *outboxauth.Claims, watch *outbox.Watch, source, action string, args json.RawMessage, key string) (invocation.Invocation, error) {
	externalID := key
	if externalID == "" {
		externalID = "mcp-" + uuid.NewString()
	}
	inv, _, err := s.outbox.Enqueue(ctx, &outbox.EnqueueParams{
		Enqueuer: outbox.Enqueuer{OrganizationID: c.Org, RequestedBy: c.Subject, AutomationID: c.AutomationID, UserID: c.UserID, Sources: c.Sources, Token: c},
		Envelope: outbox.Envelope{ExternalID: externalID, AutomationID: c.AutomationID, Tool: outbox.EnvelopeTool{Source: source, Action: action}, Args: args},
		Watch:    watch,
	})
	// The envelope's external id is the call's key, not one of its
	// arguments (a key of blanks is refused there): named as the request
	// names it.
	var ve *errs.ValidationError
	if errors.As(err, &ve) && len(ve.Fields) > 0 && ve.Fields[0].Field == "external_id" {
		return inv, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "_meta." + idempotencyMeta + " (or Idempotency-Key), the envelope's external_id: " + ve.Fields[0].Message}
	}
	return inv, err
}

// progressEvery is how often a waiting call says what it waits for.
const progressEvery = 5 * time.Second

// await waits until deadline for inv to end, in slices of wait (a Watch's
// for a call's own invocation, Outbox.Wait for an earlier one), telling
// the client what it waits for when it asked for progress: at once, then
// every progressEvery.
func (s *Server) await(ctx context.Context, wait func(context.Context, invocation.Invocation, time.Duration) (invocation.Invocation, error),
	inv invocation.Invocation, cr callRequest, deadline time.Time) (invocation.Invocation, error) {
	start := time.Now()
	defer func() { s.metrics.MCPWait.Observe(time.Since(start).Seconds()) }()
	// A shutdown ends the wait as its deadline would (Close).
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.draining, cancel)()
	for step := 0; ; step++ {
		if s.draining.Err() != nil {
			return inv, nil
		}
		if cr.wantsProgress() {
			// What it waits for costs a read for a pending call: only
			// for a client that asked.
			cr.progress(step, s.waitingFor(ctx, inv))
		}
		slice := min(time.Until(deadline), progressEvery)
		if slice <= 0 {
			return inv, nil
		}
		next, err := wait(waitCtx, inv, slice)
		if err != nil {
			if ctx.Err() == nil && s.draining.Err() != nil {
				return inv, nil
			}
			return inv, err
		}
		inv = next
		if inv.Status.Terminal() || ctx.Err() != nil {
			return inv, nil
		}
	}
}

// waitingFor says what a call waits for: a pending one that needs
// several approvers says how many more.
func (s *Server) waitingFor(ctx context.Context, inv invocation.Invocation) string {
	if inv.Status == invocation.StatusPending {
		msg := "waiting for a human to approve it in the console or Slack"
		if s.approvals != nil {
			if pr, err := s.approvals.ProgressOf(ctx, nil, &inv); err == nil && pr.Required > 1 {
				msg = fmt.Sprintf("waiting for %d more approval(s) of %d in the console or Slack", pr.Remaining(), pr.Required)
			}
		}
		if inv.ExpiresAt != nil {
			msg += ", until " + inv.ExpiresAt.UTC().Format("15:04 UTC")
		}
		return msg
	}
	return "approved; waiting for the result"
}

// waitTool waits again on an invocation a call left pending, so a model
// can keep waiting without asking for the action again.
var waitTool = &mcp.Tool{
	Name:  "outboxd_wait",
	Title: "Wait for a pending call",
	Description: "Waits again for the outcome of a call whose result said it is pending, and returns that outcome " +
		"(or, if it is still undecided, that it is still pending). It never runs anything by itself.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"invocation_id":{"type":"string","description":"The invocation_id of the pending result."}},"required":["invocation_id"],"additionalProperties":false}`),
	Annotations: &mcp.ToolAnnotations{Title: "Wait for a pending call", ReadOnlyHint: true, IdempotentHint: true},
}

// waitAgain is outboxd_wait: it waits on one of the session's invocations
// (a service token's: one of its automation's envelopes) of a source the
// token's sources claim allows. Any other is not found, with the error of
// an unknown id.
func (s *Server) waitAgain(ctx context.Context, c *outboxauth.Claims, raw json.RawMessage, cr callRequest) (*mcp.CallToolResult, error) {
	var args struct {
		InvocationID string `json:"invocation_id"`
	}
	if err := json.Unmarshal(raw, &args); err != nil || args.InvocationID == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invocation_id: give the invocation_id of a pending result"}
	}
	var inv invocation.Invocation
	var err error
	if c.Kind == outboxauth.KindService {
		inv, err = s.outbox.GetEnvelope(ctx, c.Org, args.InvocationID, c.Sources)
		if err == nil && !ownEnvelope(c, inv) {
			err = outbox.NotFound(args.InvocationID)
		}
	} else {
		inv, err = s.outbox.GetInSession(ctx, c.Org, c.SessionID, args.InvocationID, c.Sources)
	}
	if err != nil {
		return s.refusal(err)
	}
	if !inv.Status.Terminal() {
		// Its invocation's creator, cancelled, leaves it while it waits.
		done, err := s.waits.Start(ctx, c.Org, inv.ID)
		if err != nil {
			return nil, err
		}
		defer done()
		if inv, err = s.await(ctx, s.outbox.Wait, inv, cr, time.Now().Add(s.wait)); err != nil {
			return nil, err
		}
		if ctx.Err() != nil {
			// Its client cancelled it: the answer goes nowhere, and would
			// be counted as the invocation's status.
			return nil, ctx.Err()
		}
	}
	return s.outcome(inv, cr.origin), nil
}

// ownEnvelope reports whether c, a service token, may read inv, an
// envelope: one of its automation's (with no automation claim, one it
// enqueued without an automation), as GET /v1/envelopes/{id} answers.
func ownEnvelope(c *outboxauth.Claims, inv invocation.Invocation) bool {
	if c.AutomationID == "" {
		return inv.AutomationID == nil && inv.RequestedBy == c.Subject
	}
	return deref(inv.AutomationID) == c.AutomationID
}

// idempotencyKey reads the call's idempotency key from its _meta, or else
// from the HTTP request's Idempotency-Key header.
func idempotencyKey(meta mcp.Meta, header string) (string, error) {
	raw, ok := meta[idempotencyMeta]
	if !ok {
		raw, ok = header, header != ""
	}
	if !ok {
		return "", nil
	}
	key, ok := raw.(string)
	if !ok || key == "" || len(key) > 255 {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "_meta." + idempotencyMeta + " (or Idempotency-Key) must be a string of 1 to 255 bytes"}
	}
	// Refused as over REST: it is stored and indexed.
	if problem := jsontext.IdentifierProblem(key); problem != "" {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "_meta." + idempotencyMeta + " (or Idempotency-Key) " + problem}
	}
	return key, nil
}

// refusal turns an error of the outbox into what the caller gets; one
// the model reads as a tool error counts as refused.
func (s *Server) refusal(err error) (*mcp.CallToolResult, error) {
	var ve *errs.ValidationError
	var rle *errs.RateLimitError
	switch {
	case errors.As(err, &ve):
		// The fields are the tool's arguments: named as the request names
		// them ("arguments.channel"; "arguments" for the whole object).
		msg := ve.Message
		var fields []string
		for _, f := range ve.Fields {
			fields = append(fields, strings.TrimSuffix("arguments."+f.Field, ".")+": "+f.Message)
		}
		if len(fields) > 0 {
			msg += " (" + strings.Join(fields, "; ") + ")"
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
	case errors.As(err, &rle):
		s.metrics.MCPCalls.WithLabelValues("refused").Inc()
		return toolError("rate_limited", fmt.Sprintf("%s; retry in %d s", err, int(rle.RetryAfter.Seconds())+1)), nil
	case errors.Is(err, outboxauth.ErrTokenRevoked):
		// Revoked after the request's check let it in: the invocation was
		// withdrawn as it was recorded (invocation.RevokedError). Every
		// later request with the token is refused, HTTP 401 token_revoked.
		s.metrics.MCPCalls.WithLabelValues("refused").Inc()
		return toolError("token_revoked", "token revoked: your access token was revoked, so this call was not run and will not run "+
			"(it is recorded as cancelled). Do not retry it: every further request with this token is refused. "+
			"Tell the user that your access to outboxd was revoked."), nil
	}
	if kind := errs.KindOf(err); kind != nil {
		switch kind {
		case errs.NotFound, errs.IdempotencyMismatch:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		s.metrics.MCPCalls.WithLabelValues("refused").Inc()
		return toolError(kind.Code, err.Error()), nil
	}
	return nil, err
}

// outcome is the tool result of an invocation where it stands, counted
// by that status, saying so when an approver edited its params; one still
// pending links to its page in the console at origin, where a human
// decides.
func (s *Server) outcome(inv invocation.Invocation, origin string) *mcp.CallToolResult {
	return withEdits(inv, s.plainOutcome(inv, origin))
}

// plainOutcome is outcome without the edits.
func (s *Server) plainOutcome(inv invocation.Invocation, origin string) *mcp.CallToolResult {
	label := string(inv.Status)
	switch inv.Status {
	case invocation.StatusSkipped:
		label = string(invocation.StatusCompleted)
	case invocation.StatusApproved, invocation.StatusExecuting:
		label = string(invocation.StatusPending)
	}
	s.metrics.MCPCalls.WithLabelValues(label).Inc()
	switch inv.Status {
	case invocation.StatusCompleted, invocation.StatusSkipped:
		if res, ok := connectorResult(inv); ok {
			return res
		}
		var structured any = map[string]any{}
		if len(inv.Result) > 0 {
			var v any
			if json.Unmarshal(inv.Result, &v) == nil {
				structured = v
			}
		}
		// structuredContent is an object; any other result is wrapped.
		if _, ok := structured.(map[string]any); !ok {
			structured = map[string]any{"result": structured}
		}
		text, _ := json.Marshal(structured)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: structured}
	case invocation.StatusDenied:
		return toolError("action_denied", fmt.Sprintf("denied by %s: %s", deny(inv), denial(inv)))
	case invocation.StatusFailed:
		return toolError("action_failed", deref(inv.Error))
	case invocation.StatusExpired:
		return toolError("expired", "nobody approved the call in time; the approval window closed")
	case invocation.StatusCancelled:
		return toolError("cancelled", "the call was cancelled before it ran")
	}
	// Still waiting (for a human, or for the worker): say where it stands.
	waiting := map[string]any{"status": string(inv.Status), "invocation_id": inv.ID.String()}
	if inv.Status == invocation.StatusPending && inv.ExpiresAt != nil {
		waiting["expires_at"] = inv.ExpiresAt.UTC().Format(time.RFC3339)
		waiting["console_url"] = console.InvocationURL(origin, inv.ID.String())
		waiting["message"] = "a human must approve this call in the console (console_url) or Slack; it is still pending"
	} else {
		waiting["message"] = "the call is queued and has not finished yet"
	}
	text, _ := json.Marshal(waiting)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: waiting}
}

// deny says who denied: policy (a deny mode, the drift guard…) or a human.
func deny(inv invocation.Invocation) string {
	if inv.ApprovedBy != nil {
		return *inv.ApprovedBy
	}
	return "policy (" + inv.ModeSource + ")"
}

// toolError is a tool result the model reads as a failure.
func toolError(code, message string) *mcp.CallToolResult {
	body, _ := json.Marshal(map[string]string{"code": code, "message": message})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// connectorResult is a connector tool's result as its server gave it: its
// content, and its structured content (which the tool's outputSchema, when
// it has one, describes). The connector source stores both
// (executors/mcp), under snake_case keys.
func connectorResult(inv invocation.Invocation) (*mcp.CallToolResult, bool) {
	if !strings.HasPrefix(inv.Integration, mcpsource.SourcePrefix) || len(inv.Result) == 0 {
		return nil, false
	}
	var stored struct {
		Content           json.RawMessage `json:"content"`
		StructuredContent json.RawMessage `json:"structured_content"`
	}
	if json.Unmarshal(inv.Result, &stored) != nil || len(stored.Content) == 0 {
		return nil, false
	}
	raw, err := json.Marshal(map[string]json.RawMessage{"content": stored.Content, "structuredContent": stored.StructuredContent})
	if err != nil {
		return nil, false
	}
	if len(stored.StructuredContent) == 0 {
		raw, _ = json.Marshal(map[string]json.RawMessage{"content": stored.Content})
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, false
	}
	return &res, true
}

// callRequest is what a tools/call keeps of its request: the session and
// progress token its progress notifications go to, when the client asked
// for them, and the request's context they are sent with (with which the
// SDK relates them to the request); the HTTP header (Idempotency-Key); and
// the origin its client reached, where the console's pages are.
type callRequest struct {
	ctx     context.Context
	session *mcp.ServerSession
	token   any
	header  http.Header
	origin  string
	logger  *slog.Logger
}

// callRequestOf returns what a tools/call keeps of req, served with ctx.
func (s *Server) callRequestOf(ctx context.Context, req *mcp.CallToolRequest) callRequest {
	cr := callRequest{ctx: ctx, session: req.Session, origin: originOf(req), logger: s.logger}
	if req.Params != nil {
		cr.token = req.Params.GetProgressToken()
	}
	if req.Extra != nil {
		cr.header = req.Extra.Header
	}
	return cr
}

// wantsProgress reports whether the client asked for progress
// notifications.
func (cr callRequest) wantsProgress() bool { return cr.token != nil && cr.session != nil }

// progress sends step's progress notification, when the client asked for
// them. A client gone is the wait's own business: it ends with the request.
func (cr callRequest) progress(step int, message string) {
	if !cr.wantsProgress() {
		return
	}
	if err := cr.session.NotifyProgress(cr.ctx, &mcp.ProgressNotificationParams{ProgressToken: cr.token, Progress: float64(step), Message: message}); err != nil {
		cr.logger.DebugContext(cr.ctx, "mcp progress", "error", err)
	}
}
