// Package plugin is the source of plugin action packages: directories
// under plugins.dir, each holding an action.json (the Action API
// contract's plugin package) and its execute, verify and rollback
// executables in any language (a .js file runs with node). Each package is
// the action <name> of the source "plugin".
//
// Nothing runs unless plugins.allow_code_execution is on. Every
// executable runs as a child process in the kernel-enforced sandbox of
// executors/plugin/sandbox, with what its permissions declare (filesystem,
// commands, network): input JSON on stdin, output JSON on stdout, a
// scrubbed environment, a working directory of its own, a timeout and an
// output cap, killed with everything it started when it runs too long or
// outboxd stops waiting. Where the kernel cannot enforce the sandbox the
// plugins are disabled, unless plugins.allow_unsandboxed runs them as
// plain child processes in a process group. A failed verification runs
// rollback once and fails the invocation for good.
package plugin

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/plugin/sandbox"
	"github.com/outboxd/outboxd/internal/platform/netguard"
)

// SourceID is the plugins' source id.
const SourceID = "plugin"

// Bucket is the plugins' default rate bucket: shared by every
// organization, since the child processes share the workers' machines.
var Bucket = executors.BucketConfig{Name: "plugin", Rate: 20, Interval: time.Second, Burst: 20, MaxConcurrency: 8, Scope: executors.ScopeGlobal}

// DisabledReason is why plugins are listed but cannot run while code
// execution is off.
const DisabledReason = "plugin code execution is off (plugins.allow_code_execution: false)"

// Defaults of Config's fields.
const (
	// DefaultTimeout is Config.Timeout's default.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxOutputBytes is Config.MaxOutputBytes's default, 1 MiB.
	DefaultMaxOutputBytes = 1 << 20
	// DefaultMaxMemoryBytes is Config.MaxMemoryBytes's default, 1 GiB.
	DefaultMaxMemoryBytes = 1 << 30
	// DefaultMaxWorkspaceBytes is Config.MaxWorkspaceBytes's default,
	// 512 MiB.
	DefaultMaxWorkspaceBytes = 512 << 20
	// DefaultMaxWorkspaceFiles is Config.MaxWorkspaceFiles's default.
	DefaultMaxWorkspaceFiles = 10000
)

// Config is the plugins.* configuration.
type Config struct {
	// Dir holds the packages, one directory each; "" means no plugins.
	Dir string
	// AllowCodeExecution lets plugins run. Off, they are listed as
	// disabled and cannot be invoked.
	AllowCodeExecution bool
	// CommandAllowlist are the commands a package may declare in
	// verification.commands and permissions.commands: a declared command
	// must start with the words of one of them.
	CommandAllowlist []string
	// Timeout bounds each child process. Default 10s.
	Timeout time.Duration
	// MaxOutputBytes caps what a child process may write to stdout.
	// Default 1 MiB.
	MaxOutputBytes int
	// MaxMemoryBytes caps the data memory (heap and private writable
	// mappings, RLIMIT_DATA) of each sandboxed process. Default 1 GiB.
	MaxMemoryBytes int64
	// MaxWorkspaceBytes and MaxWorkspaceFiles cap what the processes of
	// one call may leave in its working directory, together: the bytes
	// its files take on disk and its entries. A run past either is
	// stopped and the call fails. Defaults 512 MiB and 10,000.
	MaxWorkspaceBytes int64
	MaxWorkspaceFiles int
	// AllowUnsandboxed runs plugins without the sandbox where the kernel
	// cannot enforce it, with a warning at start and on every run.
	// Default false: plugins are disabled there, with the reason.
	AllowUnsandboxed bool
	// AllowPrivateNetworks lets permissions.network name private,
	// loopback and internal hosts (connectors.allow_private_networks).
	AllowPrivateNetworks bool
	// Resolver resolves the hosts of permissions.network: before each
	// run, to refuse one that now points inside, and for each connection
	// a sandboxed plugin makes to one. Default net.DefaultResolver.
	Resolver *net.Resolver
	// Logger gets the warnings about the sandbox. Default: discarded.
	Logger *slog.Logger
	// Sandbox says whether the kernel can enforce the sandbox (nil when
	// it can). Default sandbox.Available; tests replace it.
	Sandbox func() error
}

// Reserved are the ids of the other sources and the actions of the core
// sources by source id: names a plugin may not take.
type Reserved map[string][]string

// Source is the plugin source.
type Source struct {
	cfg Config
	// unavailable is why the sandbox cannot run here; with
	// AllowUnsandboxed plugins run without it, otherwise they are
	// disabled.
	unavailable error
	actions     map[string]*action
	ids         []string
	run         runner
	verify      *executors.Validator
}

var _ executors.Source = (*Source)(nil)

// loader reads packages.
type loader struct {
	reserved     reserved
	allowlist    allowlist
	validator    *executors.Validator
	node         string
	allowPrivate bool
}

// Load reads every package in cfg.Dir. A package that breaks a rule —
// a name taken by another source or a core action, a command off the
// allowlist, an R2 action without rollback, a bad schema — fails the
// load with an error naming the package and the rule. It returns nil
// when cfg.Dir is empty.
func Load(cfg *Config, taken Reserved) (*Source, error) {
	if cfg.Dir == "" {
		return nil, nil
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("plugins.dir: %w", err)
	}
	if !supported {
		return nil, errors.New("plugins need a Unix system (process groups)")
	}
	allow, err := newAllowlist(cfg.CommandAllowlist)
	if err != nil {
		return nil, err
	}
	l := &loader{
		reserved:     reserved{sources: map[string]bool{SourceID: true}, actions: map[string]string{}},
		allowlist:    allow,
		validator:    executors.NewValidator(),
		allowPrivate: cfg.AllowPrivateNetworks,
	}
	srcs := make([]string, 0, len(taken))
	for src := range taken {
		srcs = append(srcs, src)
	}
	sort.Strings(srcs)
	for _, src := range srcs {
		l.reserved.sources[src] = true
		for _, a := range taken[src] {
			if _, ok := l.reserved.actions[a]; !ok {
				l.reserved.actions[a] = src + "." + a
			}
		}
	}
	if node, err := exec.LookPath("node"); err == nil {
		l.node, _ = filepath.Abs(node)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("plugins.dir: %w", err)
	}
	s := &Source{
		cfg:     *cfg,
		actions: map[string]*action{},
		run: runner{
			timeout:   cmp.Or(cfg.Timeout, DefaultTimeout),
			maxOutput: cmp.Or(cfg.MaxOutputBytes, DefaultMaxOutputBytes),
			maxMemory: uint64(cmp.Or(cfg.MaxMemoryBytes, DefaultMaxMemoryBytes)),
			maxWorkspace: workspaceUse{
				bytes:   cmp.Or(cfg.MaxWorkspaceBytes, DefaultMaxWorkspaceBytes),
				entries: cmp.Or(cfg.MaxWorkspaceFiles, DefaultMaxWorkspaceFiles),
			},
		},
		verify: l.validator,
	}
	s.cfg.Dir = dir
	s.cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	s.run.dial = egressDialer(cfg.Resolver, cfg.AllowPrivateNetworks, s.cfg.Logger)
	if cfg.AllowCodeExecution {
		// Checked only when plugins may run: the probe starts a process.
		probe := cfg.Sandbox
		if probe == nil {
			probe = sandbox.Available
		}
		s.unavailable = probe()
		switch {
		case s.unavailable == nil:
		case cfg.AllowUnsandboxed:
			s.cfg.Logger.Warn("plugins run WITHOUT A SANDBOX (plugins.allow_unsandboxed): each gets what outboxd's user may do: its files, its network, its processes",
				"reason", s.unavailable.Error())
			s.run.unsandboxed = true
		default:
			s.cfg.Logger.Error("plugins are disabled: the sandbox they need is unavailable", "reason", s.unavailable.Error(),
				"hint", errUnsandboxed.Error())
		}
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "action.json")); errors.Is(err, os.ErrNotExist) {
			continue // not a package
		}
		a, err := l.loadAction(dir)
		if err == nil && cfg.AllowCodeExecution && s.unavailable == nil && os.Geteuid() == 0 {
			err = readableByNobody(a)
		}
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", dir, err)
		}
		s.actions[a.def.ID] = a
		s.ids = append(s.ids, a.def.ID)
	}
	sort.Strings(s.ids)
	return s, nil
}

// ID returns SourceID.
func (s *Source) ID() string { return SourceID }

// Disabled says why the plugins cannot run, "" when they can.
func (s *Source) Disabled() string {
	switch {
	case !s.cfg.AllowCodeExecution:
		return DisabledReason
	case s.unavailable != nil && !s.cfg.AllowUnsandboxed:
		return "plugins cannot run: " + s.unavailable.Error() + "; " + errUnsandboxed.Error()
	}
	return ""
}

// ListActions returns the packages' definitions, also while they are
// disabled.
func (s *Source) ListActions(context.Context, executors.ExecContext) ([]executors.Definition, error) {
	out := make([]executors.Definition, 0, len(s.ids))
	for _, id := range s.ids {
		out = append(out, s.actions[id].def)
	}
	return out, nil
}

// Execute runs a package: execute, then the verification (output schema,
// verify, the declared verification commands). When the verification
// fails, rollback runs once and the invocation fails without retry, the
// steps recording what happened. Everything runs in one fresh working
// directory, removed afterwards.
func (s *Source) Execute(ctx context.Context, actionID string, params json.RawMessage, ec executors.ExecContext) (executors.Result, error) {
	a, ok := s.actions[actionID]
	if !ok {
		return executors.Result{}, &executors.Error{Code: "unknown_action", Message: fmt.Sprintf("no plugin %q", actionID), Cause: executors.ErrUnknownAction}
	}
	if reason := s.Disabled(); reason != "" {
		return executors.Result{}, &executors.Error{Code: "source_disabled", Message: reason}
	}
	if len(a.network) > 0 && !s.cfg.AllowPrivateNetworks {
		if err := checkNetwork(ctx, cmp.Or(s.cfg.Resolver, net.DefaultResolver), a.network); err != nil {
			var addrErr *netguard.AddrError
			return executors.Result{}, &executors.Error{Code: "plugin_network_refused", Message: err.Error(), Retryable: !errors.As(err, &addrErr), Cause: err}
		}
	}
	if s.run.unsandboxed {
		s.cfg.Logger.WarnContext(ctx, "running a plugin WITHOUT A SANDBOX (plugins.allow_unsandboxed)", "action_id", actionID, "reason", s.unavailable.Error())
	}
	c, err := s.run.newCall(a, ec.IdempotencyKey)
	if err != nil {
		return executors.Result{}, &executors.Error{Code: "plugin_workdir", Message: err.Error(), Retryable: true}
	}
	defer func() {
		if err := c.close(); err != nil {
			s.cfg.Logger.WarnContext(ctx, "a plugin call's working directory could not be removed", "action_id", actionID, "error", err)
		}
	}()

	input := orNull(params)
	stdout, err := s.run.run(ctx, c, a.execute, mustJSON(map[string]any{"input": input}))
	if err != nil {
		return executors.Result{}, failure("execute", err)
	}
	output := bytes.TrimSpace(stdout)
	if len(output) == 0 {
		output = []byte("null")
	}

	steps := &executors.Steps{Verification: s.verification(ctx, c, input, output)}
	if ctx.Err() != nil {
		// outboxd stopped waiting mid-verification: nothing was decided.
		// The call is retried with the same idempotency key.
		return executors.Result{}, &executors.Error{Code: "plugin_interrupted", Message: "interrupted during verification", Retryable: true, Cause: ctx.Err()}
	}
	if steps.Verification.OK {
		return executors.Result{Data: output, Steps: steps}, nil
	}

	msg := "verification failed: " + failedChecks(steps.Verification)
	if a.rollback != nil {
		steps.Rollback.Attempted = true
		state := map[string]any{"input": input, "output": jsonOrString(output), "verification": steps.Verification}
		_, err := s.run.run(ctx, c, a.rollback, mustJSON(state))
		steps.Rollback.OK = err == nil
		if err != nil {
			msg += "; rollback " + storable(err.Error())
		} else {
			msg += "; rolled back"
		}
	}
	// Not retryable: a second execute would be a second repair attempt.
	return executors.Result{}, &executors.Error{Code: "verification_failed", Message: msg, Steps: steps}
}

// verification checks execute's output: valid JSON matching the output
// schema, then verify and each declared verification command. verify is
// skipped when the output is already wrong.
func (s *Source) verification(ctx context.Context, c *call, input, output json.RawMessage) executors.Verification {
	a := c.action
	var checks []executors.Check
	add := func(c executors.Check) { checks = append(checks, c) }
	if !json.Valid(output) {
		add(executors.Check{Name: "output", OK: false, Detail: "execute's output is not JSON"})
		return summarize(checks)
	}
	if a.outputSchema != nil {
		errs, err := s.verify.ValidateValue(a.outputSchema, output)
		check := executors.Check{Name: "outputSchema", OK: err == nil && len(errs) == 0}
		switch {
		case err != nil:
			check.Detail = err.Error()
		case len(errs) > 0:
			parts := make([]string, len(errs))
			for i, e := range errs {
				parts[i] = strings.TrimSpace(e.Field + " " + e.Message)
			}
			check.Detail = strings.Join(parts, "; ")
		}
		add(check)
		if !check.OK {
			return summarize(checks)
		}
	}
	stdin := mustJSON(map[string]any{"input": input, "output": output})
	if a.verify != nil {
		stdout, err := s.run.run(ctx, c, a.verify, stdin)
		var answer struct {
			OK     *bool             `json:"ok"`
			Checks []executors.Check `json:"checks"`
		}
		if out := bytes.TrimSpace(stdout); len(out) > 0 {
			if json.Unmarshal(out, &answer) != nil {
				answer.OK = new(bool) // unreadable answer: not verified
			}
		}
		check := executors.Check{Name: "verify", OK: err == nil && (answer.OK == nil || *answer.OK)}
		switch {
		case err != nil:
			check.Detail = err.Error()
			var re *runError
			if errors.As(err, &re) && len(answer.Checks) == 0 {
				_ = json.Unmarshal(bytes.TrimSpace(re.Stdout), &answer)
			}
		case !check.OK:
			check.Detail = "verify answered ok: false"
		}
		add(check)
		checks = append(checks, answer.Checks...)
	}
	for _, words := range a.commands {
		check := executors.Check{Name: strings.Join(words, " "), OK: true}
		argv := append([]string(nil), words...)
		path, err := lookChildPath(argv[0])
		if err == nil {
			argv[0] = path
			_, err = s.run.run(ctx, c, argv, stdin)
		}
		if err != nil {
			check.OK, check.Detail = false, err.Error()
		}
		add(check)
	}
	return summarize(checks)
}

// summarize makes the verification of checks: ok when every one is. Their
// names and details may hold what the plugin said, made storable.
func summarize(checks []executors.Check) executors.Verification {
	v := executors.Verification{OK: true, Checks: checks}
	if v.Checks == nil {
		v.Checks = []executors.Check{}
	}
	for i, c := range checks {
		v.OK = v.OK && c.OK
		checks[i].Name, checks[i].Detail = storable(c.Name), storable(c.Detail)
	}
	return v
}

// storable returns s as text Postgres stores: each NUL and each byte that
// is not UTF-8 becomes U+FFFD. What a plugin says (its error, its checks,
// the names of the files it made, in a message) is stored; refused, its
// outcome could not be recorded and each attempt ran the plugin again.
func storable(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
}

func failedChecks(v executors.Verification) string {
	var failed []string
	for _, c := range v.Checks {
		if !c.OK {
			failed = append(failed, strings.TrimSpace(c.Name+" "+c.Detail))
		}
	}
	return strings.Join(failed, "; ")
}

// pluginError is what a plugin may print on stdout when it exits with a
// non-zero status, to say what went wrong.
type pluginError struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Retryable bool   `json:"retryable"`
	} `json:"error"`
}

// failure classifies a failed execute: a timeout or an interrupted run
// is retried (the same idempotency key), as is exit status 75 or an
// error the plugin marked retryable; any other failure is final.
func failure(step string, err error) *executors.Error {
	var re *runError
	if !errors.As(err, &re) {
		return &executors.Error{Code: "plugin_failed", Message: step + ": " + err.Error(), Retryable: true}
	}
	e := &executors.Error{Code: "plugin_failed", Message: step + " " + re.Error(), Cause: re.Err}
	switch re.Kind {
	case failTimeout:
		e.Code, e.Retryable = "plugin_timeout", true
	case failCancelled:
		e.Code, e.Retryable = "plugin_interrupted", true
	case failTooLarge:
		e.Code = "plugin_output_too_large"
	case failWorkspace:
		e.Code = "plugin_workspace_full"
	case failStart:
		e.Code = "plugin_not_runnable"
	case failExit:
		e.Retryable = re.Status == exitTempFail
		var pe pluginError
		if json.Unmarshal(bytes.TrimSpace(re.Stdout), &pe) == nil && pe.Error.Code+pe.Error.Message != "" {
			e.Code = cmp.Or(pe.Error.Code, e.Code)
			e.Message = cmp.Or(pe.Error.Message, e.Message)
			e.Retryable = e.Retryable || pe.Error.Retryable
		}
	}
	e.Code, e.Message = storable(e.Code), storable(e.Message)
	return e
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only values that always encode are passed
	}
	return b
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// jsonOrString returns b as JSON when it is, else as a string.
func jsonOrString(b []byte) any {
	if json.Valid(b) {
		return json.RawMessage(b)
	}
	return string(b)
}
