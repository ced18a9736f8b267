//go:build !unix

package plugin

import (
	"os"
	"os/exec"
)

// supported says whether plugins can run on this system: they need
// process groups.
const supported = false

func setProcessGroup(*exec.Cmd) {}

func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	return p.Kill()
}
