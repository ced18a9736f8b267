//go:build unix && !linux

package plugin

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in a process group of its own, so that
// killGroup reaches whatever it starts.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
