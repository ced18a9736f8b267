//go:build !linux

package sandbox

import (
	"context"
	"net"
	"os/exec"
	"runtime"
)

// WorkspaceOwner returns -1, -1: there is no sandbox to hand a workspace to.
func WorkspaceOwner() (uid, gid int) { return -1, -1 }

// Cmd is one sandboxed process; there is none on this system.
type Cmd struct {
	*exec.Cmd
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
}

// Command fails: the sandbox needs Linux.
func Command(context.Context, *Spec) (*Cmd, error) { return nil, Available() }

// Start fails: the sandbox needs Linux.
func (c *Cmd) Start() error { return Available() }

// Wait fails: the sandbox needs Linux.
func (c *Cmd) Wait() error { return Available() }

// SetupError is a sandbox that could not be set up.
type SetupError struct{ Msg string }

func (e *SetupError) Error() string { return "sandbox: " + e.Msg }

// Available says the sandbox cannot run: it needs Linux (Landlock and
// namespaces).
func Available() error {
	return unavailable("the plugin sandbox needs Linux (Landlock and namespaces), not %s", runtime.GOOS)
}
