//go:build unix && !linux

package pglaunch

import "syscall"

// setParentDeathSignal does nothing outside Linux, which alone offers a
// parent-death signal; there a server outlives a launcher that dies without
// calling Stop, and the next Start reports it as already running.
func setParentDeathSignal(*syscall.SysProcAttr) {}
