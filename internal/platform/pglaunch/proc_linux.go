package pglaunch

import "syscall"

// setParentDeathSignal asks the kernel to request a fast shutdown of the
// server if the launching process dies without calling Stop, so a crashed or
// killed application does not leave a server holding its data directory.
// Linux ties the signal to the launching OS thread, which the Go runtime
// retires only when a goroutine locked to it (runtime.LockOSThread) exits;
// callers that lock threads should not start the server from such a goroutine.
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGINT
}
