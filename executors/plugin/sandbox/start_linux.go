package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// envSpec carries the Spec (JSON) to the init; it is the init's only
// environment variable.
const envSpec = "OUTBOXD_SANDBOX_SPEC"

// nobody is the user and group the program runs as when outboxd runs as
// root.
const nobody = 65534

// errFD is the descriptor on which the init reports a failure to set up
// or to exec; it is closed on a successful exec.
const errFD = 3

// WorkspaceOwner returns the user and group that must own a writable
// workspace: nobody when outboxd runs as root (the program runs as
// nobody), else outboxd's own.
func WorkspaceOwner() (uid, gid int) {
	if os.Geteuid() == 0 {
		return nobody, nobody
	}
	return os.Geteuid(), os.Getegid()
}

// Cmd is one sandboxed process.
type Cmd struct {
	*exec.Cmd
	// Dial dials the destinations of Spec.Network for the program, each
	// time it connects to one: the caller's place to check the address
	// and bound the time. Nil dials with net.Dialer and a 10 s timeout.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)

	ctx  context.Context
	spec *Spec
	errR *os.File
	// egress receives the init's listeners (Spec.Network only); relay
	// serves them from Start to Wait.
	egress *os.File
	relay  *relay
	// failed is why Start stopped the init: Wait reports it.
	failed error
}

// Command returns the command that runs spec's program in the sandbox.
// The caller sets Stdin, Stdout, Stderr and Cancel, then calls Start and
// Wait; Wait returns a *SetupError when the sandbox could not be set up
// or the program not executed.
func Command(ctx context.Context, spec *Spec) (*Cmd, error) {
	own := *spec
	own.Network = distinct(spec.Network)
	spec = &own
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.Args = []string{"outboxd-sandbox"}
	cmd.Env = []string{envSpec + "=" + string(raw)}
	cmd.Dir = "/"
	if len(spec.Network) > MaxDestinations {
		return nil, fmt.Errorf("sandbox: %d network destinations, at most %d", len(spec.Network), MaxDestinations)
	}
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
		syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP | syscall.CLONE_NEWNET)
	attr := &syscall.SysProcAttr{Cloneflags: flags, Pdeathsig: syscall.SIGKILL}
	uid, gid := os.Geteuid(), os.Getegid()
	if uid == 0 {
		// root inside is root outside, so the init can read the binary
		// and set up; the program then runs as nobody, mapped to nobody.
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: nobody, HostID: nobody, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: nobody, HostID: nobody, Size: 1}}
		attr.GidMappingsEnableSetgroups = true
	} else {
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}
	}
	cmd.SysProcAttr = attr
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{w}
	c := &Cmd{Cmd: cmd, ctx: ctx, spec: spec, errR: r}
	if len(spec.Network) > 0 {
		pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			r.Close()
			w.Close()
			return nil, err
		}
		c.egress = os.NewFile(uintptr(pair[0]), "sandbox-egress")
		cmd.ExtraFiles = append(cmd.ExtraFiles, os.NewFile(uintptr(pair[1]), "sandbox-egress-init"))
	}
	return c, nil
}

// Start starts the init and, with Spec.Network, the relay of its
// listeners.
func (c *Cmd) Start() error {
	err := c.Cmd.Start()
	// The child holds its ends now (or never will).
	for _, f := range c.ExtraFiles {
		f.Close()
	}
	if err != nil {
		c.errR.Close()
		if c.egress != nil {
			c.egress.Close()
		}
		return err
	}
	if c.egress != nil {
		lns, err := receiveListeners(c.egress, len(c.spec.Network))
		c.egress.Close()
		switch {
		case err != nil:
			// The program must not run without its way out: stop the
			// init, and let Wait say why.
			c.failed = err
			_ = c.Process.Kill()
		case lns != nil:
			c.relay = startRelay(c.ctx, lns, c.spec.Network, c.Dial)
		}
	}
	return nil
}

// Wait waits for the program, then ends its relayed connections. A setup
// or exec failure the init reported is returned as a *SetupError,
// whatever the exit status.
func (c *Cmd) Wait() error {
	defer c.errR.Close()
	msg, _ := io.ReadAll(io.LimitReader(c.errR, 4096))
	err := c.Cmd.Wait()
	if c.relay != nil {
		c.relay.close()
	}
	if c.failed != nil && len(msg) == 0 {
		return &SetupError{Msg: "receiving the network listeners: " + c.failed.Error()}
	}
	if len(msg) > 0 {
		se := &SetupError{Msg: string(bytes.TrimSpace(msg))}
		if n, rest, ok := strings.Cut(se.Msg, " "); ok {
			if errno, err := strconv.Atoi(n); err == nil {
				se.Errno, se.Msg = syscall.Errno(errno), rest
			}
		}
		return se
	}
	return err
}

// SetupError is a sandbox that could not be set up, or a program the
// sandbox could not execute: the program did not run.
type SetupError struct {
	Msg string
	// Errno is the system's error, 0 when there is none.
	Errno syscall.Errno
}

func (e *SetupError) Error() string { return "sandbox: " + e.Msg }

// Unwrap returns the system's error, nil when there is none.
func (e *SetupError) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}

var probe struct {
	once sync.Once
	err  error
}

// Available says whether this system can enforce the sandbox: nil, or
// an error wrapping ErrUnavailable saying what is missing. It checks the
// Landlock ABI, then starts one probe init that sets everything up
// (namespaces, loopback and a listener, mounts, credentials, Landlock,
// seccomp) without running a program. The answer is computed once.
func Available() error {
	probe.once.Do(func() { probe.err = check() })
	return probe.err
}

func check() error {
	abi, err := llsyscall.LandlockGetABIVersion()
	if err != nil {
		return unavailable("Landlock is not enabled in this kernel (%v)", err)
	}
	if abi < MinABI {
		return unavailable("the kernel offers Landlock ABI %d; the sandbox needs %d (Linux 6.12 or later)", abi, MinABI)
	}
	base, err := os.MkdirTemp("", "outboxd-sandbox-probe-")
	if err != nil {
		return fmt.Errorf("sandbox probe: %w", err)
	}
	defer os.RemoveAll(base)
	// With a destination, so the probe also brings loopback up and
	// hands a listener over as a plugin with network needs.
	spec := &Spec{Workspace: filepath.Join(base, "work"), Root: filepath.Join(base, "root"),
		Network: []Destination{{Host: "127.0.0.1", Port: 443}}}
	uid, gid := WorkspaceOwner()
	if err := errors.Join(os.Mkdir(spec.Workspace, 0o700), os.Mkdir(spec.Root, 0o700), os.Lchown(spec.Workspace, uid, gid)); err != nil {
		return fmt.Errorf("sandbox probe: %w", err)
	}
	cmd, err := Command(context.Background(), spec)
	if err != nil {
		return fmt.Errorf("sandbox probe: %w", err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return unavailable("could not start a process in new user, PID, mount and network namespaces (%v); unprivileged user namespaces may be disabled", err)
	}
	err = cmd.Wait()
	var se *SetupError
	if errors.As(err, &se) {
		return unavailable("%s", se.Msg)
	}
	if err != nil {
		return unavailable("the probe failed: %v %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
