package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
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
}

// run runs argv in workdir with stdin as its standard input and returns
// its standard output. The child gets a scrubbed environment (childEnv),
// a process group of its own, and is killed with that group when it runs
// past the timeout, writes more than the output cap, or ctx ends; the
// group is killed when it exits too, so nothing it started outlives it.
// Its standard error is discarded: it may echo params outboxd keeps
// redacted.
func (r *runner) run(ctx context.Context, argv []string, workdir, idempotencyKey string, stdin []byte) ([]byte, error) {
	if len(argv) == 0 {
		return nil, &runError{Kind: failStart, Err: errors.New("nothing to run")}
	}
	stepCtx, cancelStep := context.WithTimeout(ctx, r.timeout)
	defer cancelStep()
	runCtx, abort := context.WithCancelCause(stepCtx)
	defer abort(nil)

	out := &cappedBuffer{max: r.maxOutput, overflow: func() { abort(errTooLarge) }}
	var cmd *exec.Cmd
	for attempt := 1; ; attempt++ {
		cmd = exec.CommandContext(runCtx, argv[0], argv[1:]...)
		cmd.Dir = workdir
		cmd.Env = childEnv(workdir, idempotencyKey)
		cmd.Stdin = bytes.NewReader(stdin)
		cmd.Stdout = out
		setProcessGroup(cmd)
		cmd.Cancel = func() error { return killGroup(cmd.Process) }
		// Once killed, stop waiting for whatever still holds its output open.
		cmd.WaitDelay = time.Second
		err := cmd.Start()
		if err == nil {
			break
		}
		// A file written a moment ago stays open for writing in any child
		// this process forks meanwhile, until that child execs, and the
		// kernel will not run a file open for writing (ETXTBSY; Go issue
		// 22315): try again shortly.
		if !errors.Is(err, errTextBusy) || attempt == startAttempts {
			return nil, &runError{Kind: failStart, Err: err}
		}
		time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
	}
	err := cmd.Wait()
	_ = killGroup(cmd.Process) // whatever it left running
	stdout := out.Bytes()
	switch {
	case errors.Is(context.Cause(runCtx), errTooLarge):
		return nil, &runError{Kind: failTooLarge, Stdout: stdout}
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
