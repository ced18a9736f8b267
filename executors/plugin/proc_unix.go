//go:build unix

package plugin

import (
	"errors"
	"os"
	"syscall"
)

// supported says whether plugins can run on this system.
const supported = true

// errTextBusy is the refusal to run a file open for writing.
var errTextBusy error = syscall.ETXTBSY

// killGroup kills the process group p leads: p and everything it started
// that did not leave the group.
func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	err := syscall.Kill(-p.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
