//go:build !unix

package plugin

import (
	"errors"
	"os"
	"os/exec"
)

// supported says whether plugins can run on this system: they need
// process groups.
const supported = false

// errTextBusy is the refusal to run a file open for writing; unused here.
var errTextBusy = errors.New("text file busy")

func setProcessGroup(*exec.Cmd) {}

func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	return p.Kill()
}
