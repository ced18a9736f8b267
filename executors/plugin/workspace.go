package plugin

import (
	"context"
	"fmt"
	"os"
	"time"
)

// workspaceUse is what a call's working directory holds: the bytes its
// files take on disk (allocated blocks, so a sparse file counts only what
// it holds) and its entries (files, directories, links).
type workspaceUse struct {
	bytes   int64
	entries int
}

// past returns the limit u passes, or "" when it passes none.
func (u workspaceUse) past(max workspaceUse) string {
	switch {
	case u.bytes > max.bytes:
		return fmt.Sprintf("more than plugins.max_workspace_bytes (%d bytes)", max.bytes)
	case u.entries > max.entries:
		return fmt.Sprintf("more than plugins.max_workspace_files (%d entries)", max.entries)
	}
	return ""
}

// workspaceError stops a run whose call's working directory holds more
// than its limits, or could not be measured.
type workspaceError struct{ msg string }

func (e *workspaceError) Error() string { return e.msg }

// workspacePoll is the least time between two measures of a running
// call's working directory. A measure that takes longer waits four times
// its own time before the next, so that measuring costs a fifth of a core
// at most.
const workspacePoll = 100 * time.Millisecond

// watchWorkspace measures dir while ctx lasts and calls full, once, when
// it holds more than max or cannot be measured.
func watchWorkspace(ctx context.Context, dir string, limit workspaceUse, full func(error)) {
	wait := workspacePoll
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		began := time.Now()
		if err := checkWorkspace(dir, limit); err != nil {
			full(err)
			return
		}
		wait = max(workspacePoll, 4*time.Since(began))
	}
}

// checkWorkspace returns a *workspaceError when dir holds more than max
// or cannot be measured.
func checkWorkspace(dir string, max workspaceUse) error {
	u, err := measure(dir, max)
	if limit := u.past(max); limit != "" {
		return &workspaceError{msg: "its workspace holds " + limit}
	}
	if err != nil {
		return &workspaceError{msg: "its workspace could not be measured: " + err.Error()}
	}
	return nil
}

// removeWorkspace removes base and everything beneath it. A directory the
// plugin left without its owner's write or search permission stops
// os.RemoveAll for a user other than root; those get them back (unlock),
// and the removal is tried again.
func removeWorkspace(base string) error {
	if os.RemoveAll(base) == nil {
		return nil
	}
	unlock(base)
	return os.RemoveAll(base)
}
