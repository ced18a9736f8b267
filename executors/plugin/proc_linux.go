package plugin

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in a process group of its own, so that
// killGroup reaches whatever it starts, and has the kernel kill it should
// outboxd die first.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
