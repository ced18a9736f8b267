package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/outboxd/outboxd/executors/plugin/sandbox"
)

// childPath is the PATH a plugin's processes get: the system's
// directories, not outboxd's own PATH.
const childPath = "/usr/local/bin:/usr/bin:/bin"

// exitTempFail is the exit status (EX_TEMPFAIL) by which a plugin says
// its failure is transient: the invocation is retried.
const exitTempFail = 75

// Failure kinds of one child process run.
const (
	failStart     = "start"     // could not be started
	failExit      = "exit"      // exited with a non-zero status
	failTimeout   = "timeout"   // ran past plugins.timeout and was killed
	failTooLarge  = "too_large" // wrote more than plugins.max_output_bytes and was killed
	failCancelled = "cancelled" // the caller gave up (shutdown, call deadline) and it was killed
	failWorkspace = "workspace" // filled the call's working directory past its limits
)

// runError is a child process run that did not exit with status 0.
type runError struct {
	Kind string
	// Status is the exit status, for failExit.
	Status int
	// Stdout is what it wrote before it ended, within the cap.
	Stdout []byte
	Err    error
}

func (e *runError) Error() string {
	switch e.Kind {
	case failExit:
		return fmt.Sprintf("exited with status %d", e.Status)
	case failTimeout:
		return "timed out and was killed"
	case failTooLarge:
		return "wrote more output than plugins.max_output_bytes and was killed"
	case failCancelled:
		return "interrupted (outboxd stopped waiting) and was killed"
	case failWorkspace:
		return e.Err.Error() + "; it was stopped"
	}
	return fmt.Sprintf("could not be started: %v", e.Err)
}

func (e *runError) Unwrap() error { return e.Err }

var errTooLarge = errors.New("output too large")

// startAttempts is how many times run tries to start a file the kernel
// says is open for writing.
const startAttempts = 5

// runner runs a plugin's executables as child processes.
type runner struct {
	timeout   time.Duration
	maxOutput int
	// maxMemory is each sandboxed process's data memory (Spec.MaxMemory).
	maxMemory uint64
	// maxWorkspace is what a call's working directory may hold, all its
	// processes together.
	maxWorkspace workspaceUse
	// unsandboxed runs them as plain child processes
	// (plugins.allow_unsandboxed where the sandbox is unavailable).
	unsandboxed bool
	// dial connects a sandboxed plugin to a destination it declared
	// (egressDialer).
	dial func(ctx context.Context, network, address string) (net.Conn, error)
}

// call is one attempt of an action: the processes it runs share a fresh
// working directory.
type call struct {
	action *action
	key    string
	// base holds work, the working directory, and root, on which the
	// sandbox builds each process's root file system.
	base, work, root string
}

// newCall makes the directories of one attempt. The working directory
// belongs to the user the sandboxed processes run as.
func (r *runner) newCall(a *action, key string) (*call, error) {
	base, err := os.MkdirTemp("", "outboxd-plugin-")
	if err != nil {
		return nil, err
	}
	c := &call{action: a, key: key, base: base, work: filepath.Join(base, "work"), root: filepath.Join(base, "root")}
	err = errors.Join(os.Mkdir(c.work, 0o700), os.Mkdir(c.root, 0o700))
	if err == nil && !r.unsandboxed {
		uid, gid := sandbox.WorkspaceOwner()
		err = os.Lchown(c.work, uid, gid)
	}
	if err != nil {
		_ = c.close()
		return nil, err
	}
	return c, nil
}

// close removes the attempt's directories.
func (c *call) close() error { return removeWorkspace(c.base) }

// writes says whether c's processes may write in its working directory:
// a workspace action's, or any action's without the sandbox.
func (r *runner) writes(c *call) bool { return c.action.writable || r.unsandboxed }

// process is a started child process: a plain one or a sandboxed one.
type process interface {
	Start() error
	Wait() error
}

// command returns the child process that runs argv for c: in the sandbox
// (permissions of c's action) unless r is unsandboxed.
func (r *runner) command(ctx context.Context, c *call, argv []string) (*exec.Cmd, process, error) {
	env := childEnv(c.work, c.key)
	if r.unsandboxed {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = c.work
		cmd.Env = env
		setProcessGroup(cmd)
		cmd.Cancel = func() error { return killGroup(cmd.Process) }
		return cmd, cmd, nil
	}
	a := c.action
	// A file deleted while it is open leaves the workspace's measure:
	// none may be larger than the workspace may hold.
	spec := &sandbox.Spec{
		Argv: argv, Env: env, Workspace: c.work, Writable: a.writable, Root: c.root,
		Read: []string{a.dir}, Exec: a.exec, MaxMemory: r.maxMemory, MaxFileSize: uint64(r.maxWorkspace.bytes),
	}
	for _, h := range a.network {
		spec.Network = append(spec.Network, sandbox.Destination(h))
	}
	sc, err := sandbox.Command(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	sc.Dial = r.dial
	// The program is PID 1 of its PID namespace: killing it kills
	// everything it started.
	sc.Cancel = func() error { return sc.Process.Kill() }
	return sc.Cmd, sc, nil
}

// run runs argv in c's working directory with stdin as its standard
// input and returns its standard output. The child gets a scrubbed
// environment (childEnv) and the sandbox (or, unsandboxed, a process
// group of its own), and is killed with everything it started when it
// runs past the timeout, writes more than the output cap, or ctx ends;
// nothing it started outlives it either way; also when, with the other
// runs of c, it fills c's working directory past the runner's limits
// (measured while it runs, and once more when it ends). Its standard
// error is discarded: it may echo params outboxd keeps redacted.
func (r *runner) run(ctx context.Context, c *call, argv []string, stdin []byte) ([]byte, error) {
	if len(argv) == 0 {
		return nil, &runError{Kind: failStart, Err: errors.New("nothing to run")}
	}
	stepCtx, cancelStep := context.WithTimeout(ctx, r.timeout)
	defer cancelStep()
	runCtx, abort := context.WithCancelCause(stepCtx)
	defer abort(nil)

	out := &cappedBuffer{max: r.maxOutput, overflow: func() { abort(errTooLarge) }}
	if r.writes(c) {
		go watchWorkspace(runCtx, c.work, r.maxWorkspace, abort)
	}
	var cmd *exec.Cmd
	var err error
	for attempt := 1; ; attempt++ {
		var p process
		cmd, p, err = r.command(runCtx, c, argv)
		if err != nil {
			return nil, &runError{Kind: failStart, Err: err}
		}
		cmd.Stdin = bytes.NewReader(stdin)
		cmd.Stdout = out
		// Once killed, stop waiting for whatever still holds its output open.
		cmd.WaitDelay = time.Second
		if err = p.Start(); err == nil {
			err = p.Wait()
		}
		// A file written a moment ago stays open for writing in any child
		// this process forks meanwhile, until that child execs, and the
		// kernel will not run a file open for writing (ETXTBSY; Go issue
		// 22315): try again shortly. The program did not run.
		if !errors.Is(err, errTextBusy) || attempt == startAttempts {
			break
		}
		time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
	}
	if cmd.Process != nil && r.unsandboxed {
		_ = killGroup(cmd.Process) // whatever it left running
	}
	var setup *sandbox.SetupError
	if errors.As(err, &setup) || (err != nil && cmd.Process == nil) {
		return nil, &runError{Kind: failStart, Err: err}
	}
	stdout := out.Bytes()
	if r.writes(c) && context.Cause(runCtx) == nil {
		// What it wrote since the last measure.
		if err := checkWorkspace(c.work, r.maxWorkspace); err != nil {
			abort(err)
		}
	}
	var full *workspaceError
	switch cause := context.Cause(runCtx); {
	case errors.Is(cause, errTooLarge):
		return nil, &runError{Kind: failTooLarge, Stdout: stdout}
	case errors.As(cause, &full):
		return nil, &runError{Kind: failWorkspace, Stdout: stdout, Err: cause}
	case ctx.Err() != nil:
		return nil, &runError{Kind: failCancelled, Stdout: stdout, Err: ctx.Err()}
	case stepCtx.Err() != nil:
		return nil, &runError{Kind: failTimeout, Stdout: stdout, Err: stepCtx.Err()}
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return nil, &runError{Kind: failExit, Status: exitErr.ExitCode(), Stdout: stdout, Err: err}
	}
	if err != nil {
		return nil, &runError{Kind: failStart, Stdout: stdout, Err: err}
	}
	return stdout, nil
}

// childEnv is the whole environment of a plugin process: nothing of
// outboxd's own (no OUTBOXD_* settings, no DATABASE_URL, no secrets), only
// a system PATH, its working directory as HOME, a UTF-8 locale and the
// invocation's idempotency key.
func childEnv(workdir, idempotencyKey string) []string {
	return []string{
		"PATH=" + childPath,
		"HOME=" + workdir,
		"LANG=C.UTF-8",
		"OUTBOXD_IDEMPOTENCY_KEY=" + idempotencyKey,
	}
}

// lookChildPath resolves a command's program the way the child's PATH
// would: a name with a slash as is (relative to the working directory),
// otherwise the first executable of that name in childPath.
func lookChildPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(childPath) {
		path := filepath.Join(dir, name)
		if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
			return path, nil
		}
	}
	return "", fmt.Errorf("%s is not in %s", name, childPath)
}

// cappedBuffer keeps at most max bytes and calls overflow once when more
// arrive.
type cappedBuffer struct {
	buf      bytes.Buffer
	max      int
	over     bool
	overflow func()
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.over {
		return len(p), nil
	}
	if b.buf.Len()+len(p) > b.max {
		b.over = true
		b.overflow()
		return len(p), nil
	}
	return b.buf.Write(p)
}

// Bytes returns what was kept; only call it after the process ended.
func (b *cappedBuffer) Bytes() []byte { return b.buf.Bytes() }
