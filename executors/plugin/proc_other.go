//go:build !unix

package plugin

import (
	"errors"
	"io/fs"
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

// allocated is what a file takes on disk: its size here.
func allocated(info fs.FileInfo) int64 { return info.Size() }
