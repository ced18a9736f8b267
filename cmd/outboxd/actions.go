package main

import (
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
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/outboxd/outboxd/internal/client"
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
	session string
	api     *client.Session
}

func newAgent() (*agent, error) {
	base := os.Getenv("OUTBOXD_URL")
	token := os.Getenv("OUTBOXD_TOKEN")
	if strings.TrimRight(base, "/") == "" || token == "" {
		return nil, usageError("set OUTBOXD_URL (the outboxd API) and OUTBOXD_TOKEN (a sandbox token)")
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageError("OUTBOXD_URL %q is not the API's address: give its http:// or https:// URL, such as http://127.0.0.1:8080", base)
	}
	session, err := tokenSession(token)
	if err != nil {
		return nil, usageError("OUTBOXD_TOKEN: %v", err)
	}
	return &agent{session: session, api: client.New(base, token).Session(session)}, nil
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

// exit turns a failed call into an exit: an API answer of 4xx (auth, bad
// params, limits) or a failure to reach the API is a usage error, any
// other answer failed.
func exit(err error) error {
	var apiErr *client.Error
	if !errors.As(err, &apiErr) {
		return usageError("%v", err)
	}
	msg := apiErr.Error() + fieldErrors(apiErr.Details)
	if apiErr.Status >= 400 && apiErr.Status < 500 {
		return &exitError{code: exitUsage, err: errors.New(msg)}
	}
	return &exitError{code: exitFailed, err: errors.New(msg)}
}

// fieldErrors lists the field errors of a 400's details ("fields": params
// that fail the action's schema), one per line, so that the agent learns
// which param to fix; "" without any.
func fieldErrors(details map[string]any) string {
	fields, _ := details["fields"].([]any)
	var b strings.Builder
	for _, f := range fields {
		m, _ := f.(map[string]any)
		field, _ := m["field"].(string)
		message, _ := m["message"].(string)
		if field == "" {
			field = "params"
		}
		fmt.Fprintf(&b, "\n  %s: %s", field, message)
	}
	return b.String()
}

func newActionsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "actions",
		Short: "Use outboxd from inside a sandbox: list, guide, run and cancel actions",
		Long: `Configured by OUTBOXD_URL and OUTBOXD_TOKEN (a sandbox token; the session
comes from it). Exit codes: 0 completed, 1 failed, 2 denied, 3 expired,
4 usage or auth error.`,
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError("%v", err) })
	// Without a RunE of its own, cobra answers an unknown subcommand
	// (`outboxd actions describe`) with the help and exit 0, which an agent
	// reads as success.
	cmd.Args = cobra.ArbitraryArgs
	cmd.SuggestionsMinimumDistance = 2
	cmd.RunE = func(cmd *cobra.Command, a []string) error {
		if len(a) == 0 {
			return cmd.Help()
		}
		hint := "the commands are list, guide, run and cancel"
		if s := cmd.SuggestionsFor(a[0]); len(s) > 0 {
			hint = "did you mean " + strings.Join(s, " or ") + "?"
		}
		return usageError("unknown command %q for %q: %s (%s --help)", a[0], cmd.CommandPath(), hint, cmd.CommandPath())
	}
	cmd.AddCommand(newActionsListCommand(), newActionsGuideCommand(), newActionsRunCommand(), newActionsCancelCommand())
	return cmd
}

func args(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if len(a) != n {
			return usageError("usage: %s %s", cmd.Parent().CommandPath(), cmd.Use)
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
			cat, err := a.api.Available(cmd.Context())
			if err != nil {
				return exit(err)
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				_, err := cmd.OutOrStdout().Write(cat.Raw)
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ACTION\tMODE\tTIER\tDELIVERY\tDESCRIPTION")
			for _, x := range cat.Actions {
				desc, _, _ := strings.Cut(x.Description, "\n")
				fmt.Fprintf(tw, "%s.%s\t%s\t%s\t%s\t%s\n", x.Source, x.Action, x.Mode, x.RiskTier, x.Delivery, desc)
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
			guide, err := a.api.Guide(cmd.Context(), argv[0])
			if err != nil {
				return exit(err)
			}
			_, err = io.WriteString(cmd.OutOrStdout(), guide)
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
			key, _ := cmd.Flags().GetString("idempotency-key")
			r := &runner{agent: a, out: cmd.OutOrStdout(), log: cmd.ErrOrStderr(), key: key}
			return r.run(ctx, argv[0], argv[1], params)
		},
	}
	cmd.Flags().String("params", "{}", "the action's params as a JSON object")
	cmd.Flags().String("idempotency-key", "", "the invoke's Idempotency-Key; by default one derived from the session, the action and the params, "+
		"so that the same command finds the same invocation, however it ended: a key of your own asks anew after a denial, an expiry or a failure")
	cmd.Flags().Duration("timeout", 0, "give up waiting after this long (default: wait until the approval window closes)")
	return cmd
}

func newActionsCancelCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel <invocation_id> [--json]",
		Short: "Withdraw an invocation of this session that has not started (pending, or approved but not yet running)",
		Args:  args(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			// Checked here, so that a typo is named as such rather than
			// answered by the API as an invocation it does not know.
			id, err := uuid.Parse(argv[0])
			if err != nil {
				return usageError("%q is not an invocation id: give the UUID that `outboxd actions run` named (invocation <id>)", argv[0])
			}
			a, err := newAgent()
			if err != nil {
				return err
			}
			inv, err := a.api.Cancel(cmd.Context(), id.String())
			if err != nil {
				return cancelExit(id.String(), err)
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				out, err := json.MarshalIndent(inv, "", "  ")
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(append(out, '\n'))
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "INVOCATION\tACTION\tSTATUS")
			fmt.Fprintf(tw, "%s\t%s.%s\t%s\n", inv.ID, inv.Integration, inv.Action, inv.Status)
			return tw.Flush()
		},
	}
	cmd.Flags().Bool("json", false, "print the cancelled invocation as JSON")
	return cmd
}

// cancelExit names why invocation id could not be cancelled. The CLI has
// no exit code of its own for "not possible now": one that has started
// or ended (409) exits as failed, one the session does not have (404)
// as a usage error, like any other 4xx.
func cancelExit(id string, err error) error {
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		switch apiErr.Status {
		case http.StatusConflict:
			return &exitError{code: exitFailed, err: fmt.Errorf("invocation %s was not cancelled: it has started or ended, and only one that has not can be (%v)", id, apiErr)}
		case http.StatusNotFound:
			return &exitError{code: exitUsage, err: fmt.Errorf("this session has no invocation %s (%v)", id, apiErr)}
		}
	}
	return exit(err)
}

// runner invokes one action and follows it to its end.
type runner struct {
	*agent
	out, log io.Writer
	// key is the Idempotency-Key to send; "" derives it from the call.
	key string
}

// idempotencyKey is derived from the call, so running the same command
// again (after a lost answer, a killed shell) finds the same invocation
// instead of asking twice.
func (r *runner) idempotencyKey(integration, action string, params any) string {
	if r.key != "" {
		return r.key
	}
	canonical, _ := json.Marshal([]any{r.session, integration, action, params})
	sum := sha256.Sum256(canonical)
	return "cli-" + hex.EncodeToString(sum[:16])
}

func (r *runner) run(ctx context.Context, integration, action string, params any) error {
	// The stream opens first, so no event of the invocation can slip
	// between the answer and the subscription.
	stream, err := r.api.Events(ctx, "")
	if err != nil {
		if ctx.Err() != nil {
			return r.gaveUp(ctx, nil)
		}
		return exit(err)
	}
	defer func() { stream.Close() }()

	answer, err := r.api.Invoke(ctx, client.InvokeRequest{Integration: integration, Action: action, Params: params}, r.idempotencyKey(integration, action, params))
	if answer == nil {
		if ctx.Err() != nil {
			// The invoke may have been written before the answer was lost.
			return r.gaveUp(ctx, nil)
		}
		return exit(err)
	}
	inv := answer.Invocation
	if answer.Status != http.StatusAccepted || client.Final(inv.Status) {
		// Ran at once, denied by policy, failed, or an earlier run of the
		// same call already ended.
		return r.finish(&inv)
	}
	if inv.Status == "pending" {
		fmt.Fprintf(r.log, "waiting for approval of %s.%s (invocation %s)%s\n", integration, action, inv.ID, until(inv.ExpiresAt))
	} else {
		fmt.Fprintf(r.log, "running %s.%s (invocation %s)\n", integration, action, inv.ID)
	}
	for {
		var n client.Notice
		ev, err := stream.Next()
		if err == nil {
			if err = ev.Decode(&n); err != nil {
				err = fmt.Errorf("decoding event: %w", err)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return r.gaveUp(ctx, &inv)
			}
			// The stream dropped: resume after the last event seen, and
			// check the invocation in case it ended meanwhile.
			stream.Close()
			resumed, err := r.api.Events(ctx, stream.LastID())
			if err != nil {
				if ctx.Err() != nil {
					return r.gaveUp(ctx, &inv)
				}
				return exit(err)
			}
			stream = resumed
			if cur, err := r.api.Invocation(ctx, inv.ID); err == nil && client.Final(cur.Status) {
				return r.finish(cur)
			}
			continue
		}
		if n.InvocationID != inv.ID {
			continue
		}
		switch ev.Event {
		case "action_approval_result":
			switch n.Status {
			case "approved":
				fmt.Fprintf(r.log, "approved by %s; running\n", deref(n.DecidedBy, "someone"))
			case "denied":
				return &exitError{code: exitDenied, err: fmt.Errorf("denied by %s: %s%s", deref(n.DecidedBy, "a human"), deref(n.Reason, "no reason given"), askAnew(inv.ID))}
			case "expired":
				return &exitError{code: exitExpired, err: fmt.Errorf("the approval window closed before anyone decided%s", askAnew(inv.ID))}
			}
		case "action_completed":
			cur, err := r.api.Invocation(ctx, inv.ID)
			if err != nil {
				if ctx.Err() != nil {
					return r.gaveUp(ctx, &inv)
				}
				return exit(err)
			}
			return r.finish(cur)
		}
	}
}

// runAgain is how an agent resumes a wait it gave up.
const runAgain = "Run the same command again to wait for it: it finds the same invocation instead of asking twice."

// gaveUp ends a run whose wait was cut short, by --timeout or an
// interrupt, with exitFailed and where the invocation stands: a pending
// one can still be approved and run, so the agent must not take it for
// failed. inv is nil when the invoke had no answer yet (it may have been
// written all the same). An invocation that ended meanwhile is finished
// as usual.
func (r *runner) gaveUp(ctx context.Context, inv *client.Invocation) error {
	why := "interrupted"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why = "--timeout passed"
	}
	if inv == nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("%s before outboxd answered: the action may have been invoked all the same, and may still run. %s", why, runAgain)}
	}
	lookCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	cur := inv
	if got, err := r.api.Invocation(lookCtx, inv.ID); err == nil {
		if client.Final(got.Status) {
			return r.finish(got)
		}
		cur = got
	}
	state := "is still " + cur.Status
	withdraw := ""
	switch cur.Status {
	case "pending":
		state += ": a human can still approve it" + until(cur.ExpiresAt) + ", and then it runs"
		withdraw = withdrawIt(cur.ID)
	case "approved", "executing":
		state += " and will run to its end"
	}
	return &exitError{code: exitFailed, err: fmt.Errorf("%s: invocation %s %s. %s%s", why, cur.ID, state, runAgain, withdraw)}
}

// withdrawIt is how an agent that no longer wants a pending invocation
// takes it back; the command comes last, to be copied whole.
func withdrawIt(id string) string {
	return " If you no longer want it, withdraw it before it runs: outboxd actions cancel " + id
}

// until reads " until <t>" for an approval window's end, "" without one.
func until(t *time.Time) string {
	if t == nil {
		return ""
	}
	return " until " + t.UTC().Format(time.RFC3339)
}

// finish prints a finished invocation's result and picks the exit.
func (r *runner) finish(inv *client.Invocation) error {
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
		return &exitError{code: exitDenied, err: fmt.Errorf("denied (%s): %s%s", deref(inv.DeniedReason, "policy"), deref(inv.Error, "no reason given"), askAnew(inv.ID))}
	case "expired":
		return &exitError{code: exitExpired, err: fmt.Errorf("the approval window closed before anyone decided%s", askAnew(inv.ID))}
	}
	return &exitError{code: exitFailed, err: fmt.Errorf("%s: %s%s", inv.Status, deref(inv.Error, "no error recorded"), askAnew(inv.ID))}
}

// askAnew follows every outcome but completed: the same command answers
// with the same invocation however it ended, so an agent that retries an
// expired request unchanged would learn only that it expired, again.
func askAnew(id string) string {
	return fmt.Sprintf("\n(invocation %s: this same command answers with it again; to ask anew, add --idempotency-key with a new key of your own)", id)
}

func deref(s *string, def string) string {
	if s == nil || *s == "" {
		return def
	}
	return *s
}
