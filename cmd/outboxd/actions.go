package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// Exit codes of `outboxd actions`.
const (
	exitCompleted = 0
	exitFailed    = 1
	exitDenied    = 2
	exitExpired   = 3
	exitUsage     = 4
)

// usageError ends an actions command with exitUsage.
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// agent is the API as a sandbox sees it: OUTBOXD_URL, OUTBOXD_TOKEN and the
// token's session.
type agent struct {
	base, token, session string
	client               *http.Client
}

func newAgent() (*agent, error) {
	base := strings.TrimRight(os.Getenv("OUTBOXD_URL"), "/")
	token := os.Getenv("OUTBOXD_TOKEN")
	if base == "" || token == "" {
		return nil, usageError("set OUTBOXD_URL (the outboxd API) and OUTBOXD_TOKEN (a sandbox token)")
	}
	session, err := tokenSession(token)
	if err != nil {
		return nil, usageError("OUTBOXD_TOKEN: %v", err)
	}
	return &agent{base: base, token: token, session: session, client: &http.Client{}}, nil
}

// tokenSession reads the session_id claim of a JWT without verifying it:
// the server does that.
func tokenSession(token string) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", errors.New("not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", errors.New("not a JWT")
	}
	var claims struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil || claims.SessionID == "" {
		return "", errors.New("not a sandbox token (no session_id claim)")
	}
	return claims.SessionID, nil
}

func (a *agent) path(rest string) string {
	return a.base + "/v1/sessions/" + url.PathEscape(a.session) + rest
}

// do calls the API and returns the status and body; a transport error is
// a usage error (the URL is wrong or the server is down).
func (a *agent) do(ctx context.Context, method, u string, body []byte, headers ...string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, usageError("%v", err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, usageError("calling outboxd: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, usageError("reading the answer: %v", err)
	}
	return resp.StatusCode, raw, nil
}

// apiError turns an error answer without an invocation into an exit: 4xx
// (auth, bad params, limits) are usage errors, the rest failed.
func apiError(status int, raw []byte) error {
	var body struct {
		Error struct {
			Code, Message string
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &body)
	msg := fmt.Sprintf("HTTP %d: %s", status, strings.TrimSpace(cmpOr(body.Error.Message, string(raw))))
	if status >= 400 && status < 500 {
		return &exitError{code: exitUsage, err: errors.New(msg)}
	}
	return &exitError{code: exitFailed, err: errors.New(msg)}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func newActionsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "actions",
		Short: "Use outboxd from inside a sandbox: list, guide and run actions",
		Long: `Configured by OUTBOXD_URL and OUTBOXD_TOKEN (a sandbox token; the session
comes from it). Exit codes: 0 completed, 1 failed, 2 denied, 3 expired,
4 usage or auth error.`,
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError("%v", err) })
	cmd.AddCommand(newActionsListCommand(), newActionsGuideCommand(), newActionsRunCommand())
	return cmd
}

func args(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if len(a) != n {
			return usageError("usage: outboxd %s", cmd.Use)
		}
		return nil
	}
}

func newActionsListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the actions this session may use",
		Args:  args(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := newAgent()
			if err != nil {
				return err
			}
			status, raw, err := a.do(cmd.Context(), "GET", a.path("/actions/available"), nil)
			if err != nil {
				return err
			}
			if status != http.StatusOK {
				return apiError(status, raw)
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				_, err := cmd.OutOrStdout().Write(raw)
				return err
			}
			var body struct {
				Actions []struct {
					Source, Action, Description, Mode, Delivery string
					Tier                                        string `json:"risk_tier"`
				} `json:"actions"`
			}
			if err := json.Unmarshal(raw, &body); err != nil {
				return fmt.Errorf("decoding the catalog: %w", err)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ACTION\tMODE\tTIER\tDELIVERY\tDESCRIPTION")
			for _, x := range body.Actions {
				desc, _, _ := strings.Cut(x.Description, "\n")
				fmt.Fprintf(tw, "%s.%s\t%s\t%s\t%s\t%s\n", x.Source, x.Action, x.Mode, x.Tier, x.Delivery, desc)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().Bool("json", false, "print the catalog as the API returns it")
	return cmd
}

func newActionsGuideCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "guide <integration>",
		Short: "Print an integration's guide (markdown)",
		Args:  args(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			a, err := newAgent()
			if err != nil {
				return err
			}
			status, raw, err := a.do(cmd.Context(), "GET", a.path("/actions/guide/"+url.PathEscape(argv[0])), nil)
			if err != nil {
				return err
			}
			if status != http.StatusOK {
				return apiError(status, raw)
			}
			_, err = cmd.OutOrStdout().Write(raw)
			return err
		},
	}
}

func newActionsRunCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run <integration> <action> --params '{...}'",
		Short: "Invoke an action; wait for approval and completion; print the result",
		Args:  args(2),
		RunE: func(cmd *cobra.Command, argv []string) error {
			a, err := newAgent()
			if err != nil {
				return err
			}
			rawParams, _ := cmd.Flags().GetString("params")
			var params any
			if err := json.Unmarshal([]byte(rawParams), &params); err != nil {
				return usageError("--params is not JSON: %v", err)
			}
			if _, ok := params.(map[string]any); !ok {
				return usageError("--params must be a JSON object")
			}
			timeout, _ := cmd.Flags().GetDuration("timeout")
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			r := &runner{agent: a, out: cmd.OutOrStdout(), log: cmd.ErrOrStderr()}
			return r.run(ctx, argv[0], argv[1], params)
		},
	}
	cmd.Flags().String("params", "{}", "the action's params as a JSON object")
	cmd.Flags().Duration("timeout", 0, "give up waiting after this long (default: wait until the approval window closes)")
	return cmd
}

// runner invokes one action and follows it to its end.
type runner struct {
	*agent
	out, log io.Writer
}

// idempotencyKey is derived from the call, so running the same command
// again (after a lost answer, a killed shell) finds the same invocation
// instead of asking twice.
func (r *runner) idempotencyKey(integration, action string, params any) string {
	canonical, _ := json.Marshal([]any{r.session, integration, action, params})
	sum := sha256.Sum256(canonical)
	return "cli-" + hex.EncodeToString(sum[:16])
}

type invocationView struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"`
	Result       json.RawMessage `json:"result"`
	Error        *string         `json:"error"`
	DeniedReason *string         `json:"denied_reason"`
	ApprovedBy   *string         `json:"approved_by"`
}

func (r *runner) run(ctx context.Context, integration, action string, params any) error {
	// The stream opens first, so no event of the invocation can slip
	// between the answer and the subscription.
	stream, err := r.openStream(ctx, "")
	if err != nil {
		return err
	}
	defer func() { stream.Close() }()

	body, _ := json.Marshal(map[string]any{"integration": integration, "action": action, "params": params})
	status, raw, err := r.do(ctx, "POST", r.path("/actions/invoke"), body, "Idempotency-Key", r.idempotencyKey(integration, action, params))
	if err != nil {
		return err
	}
	var answer struct {
		Invocation invocationView  `json:"invocation"`
		Result     json.RawMessage `json:"result"`
	}
	_ = json.Unmarshal(raw, &answer)
	inv := answer.Invocation
	if inv.ID == "" {
		return apiError(status, raw)
	}
	if status != http.StatusAccepted || isFinal(inv.Status) {
		// Ran at once, denied by policy, failed, or an earlier run of the
		// same call already ended.
		return r.finish(inv)
	}
	if inv.Status == "pending" {
		fmt.Fprintf(r.log, "waiting for approval of %s.%s (invocation %s)\n", integration, action, inv.ID)
	} else {
		fmt.Fprintf(r.log, "running %s.%s (invocation %s)\n", integration, action, inv.ID)
	}
	for {
		ev, err := stream.next()
		if err != nil {
			if ctx.Err() != nil {
				return &exitError{code: exitFailed, err: fmt.Errorf("gave up waiting for invocation %s: %w", inv.ID, ctx.Err())}
			}
			// The stream dropped: resume after the last event seen, and
			// check the invocation in case it ended meanwhile.
			stream.Close()
			if stream, err = r.openStream(ctx, stream.lastID); err != nil {
				return err
			}
			if cur, err := r.get(ctx, inv.ID); err == nil && isFinal(cur.Status) {
				return r.finish(cur)
			}
			continue
		}
		if ev.Data.InvocationID != inv.ID {
			continue
		}
		switch ev.Event {
		case "action_approval_result":
			switch ev.Data.Status {
			case "approved":
				fmt.Fprintf(r.log, "approved by %s; running\n", deref(ev.Data.DecidedBy, "someone"))
			case "denied":
				return &exitError{code: exitDenied, err: fmt.Errorf("denied by %s: %s", deref(ev.Data.DecidedBy, "a human"), deref(ev.Data.Reason, "no reason given"))}
			case "expired":
				return &exitError{code: exitExpired, err: errors.New("the approval window closed before anyone decided")}
			}
		case "action_completed":
			cur, err := r.get(ctx, inv.ID)
			if err != nil {
				return err
			}
			return r.finish(cur)
		}
	}
}

func isFinal(status string) bool {
	switch status {
	case "completed", "failed", "denied", "expired", "skipped", "cancelled":
		return true
	}
	return false
}

// finish prints a finished invocation's result and picks the exit.
func (r *runner) finish(inv invocationView) error {
	switch inv.Status {
	case "completed":
		out := inv.Result
		if len(out) == 0 {
			out = json.RawMessage("null")
		}
		var buf bytes.Buffer
		if json.Indent(&buf, out, "", "  ") != nil {
			buf.Write(out)
		}
		buf.WriteByte('\n')
		_, err := r.out.Write(buf.Bytes())
		return err
	case "denied":
		return &exitError{code: exitDenied, err: fmt.Errorf("denied (%s): %s", deref(inv.DeniedReason, "policy"), deref(inv.Error, "no reason given"))}
	case "expired":
		return &exitError{code: exitExpired, err: errors.New("the approval window closed before anyone decided")}
	}
	return &exitError{code: exitFailed, err: fmt.Errorf("%s: %s", inv.Status, deref(inv.Error, "no error recorded"))}
}

func (r *runner) get(ctx context.Context, id string) (invocationView, error) {
	status, raw, err := r.do(ctx, "GET", r.path("/actions/invocations/"+url.PathEscape(id)), nil)
	if err != nil {
		return invocationView{}, err
	}
	if status != http.StatusOK {
		return invocationView{}, apiError(status, raw)
	}
	var body struct {
		Invocation invocationView `json:"invocation"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return invocationView{}, fmt.Errorf("decoding invocation: %w", err)
	}
	return body.Invocation, nil
}

// sseStream reads the session's event stream.
type sseStream struct {
	body   io.ReadCloser
	sc     *bufio.Scanner
	lastID string
}

type sseEvent struct {
	Event string
	Data  struct {
		InvocationID string  `json:"invocation_id"`
		Status       string  `json:"status"`
		DecidedBy    *string `json:"decided_by"`
		Reason       *string `json:"reason"`
	}
}

func (r *runner) openStream(ctx context.Context, lastID string) (*sseStream, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", r.path("/events"), nil)
	if err != nil {
		return nil, usageError("%v", err)
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, usageError("calling outboxd: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return nil, apiError(resp.StatusCode, raw)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	s := &sseStream{body: resp.Body, sc: sc, lastID: lastID}
	// The first comment says the subscription is in place.
	for sc.Scan() {
		if sc.Text() == "" {
			break
		}
	}
	return s, sc.Err()
}

func (s *sseStream) next() (sseEvent, error) {
	var ev sseEvent
	var data strings.Builder
	var id string
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "":
			if data.Len() == 0 {
				continue
			}
			if id != "" {
				s.lastID = id
			}
			if err := json.Unmarshal([]byte(data.String()), &ev.Data); err != nil {
				return ev, fmt.Errorf("decoding event: %w", err)
			}
			return ev, nil
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "event:"):
			ev.Event = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimPrefix(line[5:], " "))
		}
	}
	return ev, cmpErr(s.sc.Err(), io.ErrUnexpectedEOF)
}

func (s *sseStream) Close() { _ = s.body.Close() }

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func deref(s *string, def string) string {
	if s == nil || *s == "" {
		return def
	}
	return *s
}
