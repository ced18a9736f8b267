// Package sandbox runs a program in a sandbox the Linux kernel enforces:
// outboxd starts itself again (/proc/self/exe) as a small init in fresh
// user, PID, mount, IPC, UTS and network namespaces. The init builds a
// root file system holding only the paths the Spec names, opens the
// listeners of the destinations it may reach (relayed by outboxd, see
// Spec.Network), leaves the program no namespaces of its own to make,
// makes the program the OOM killer's first choice and nice (10), drops
// to an unprivileged user and every capability, sets rlimits and
// no_new_privs, restricts itself with Landlock (files, TCP ports,
// abstract sockets and signals) and a seccomp filter (no socket but
// UNIX, IP and netlink ones, no Multipath TCP, which Landlock does not
// see, no io_uring, whose operations the filter would not see, no
// kernel keyrings, which are not namespaced, no userfaultfd, and no
// memory that the data cap does not count), closes every descriptor but
// 0-2 and execs the program. The program is PID 1 of its namespace:
// when it exits, or is killed, everything it started dies with it.
//
// The init is entered from this package's init function, so any binary
// that imports the package (outboxd, a test binary) can start it.
package sandbox

import (
	"errors"
	"fmt"
)

// MinABI is the Landlock ABI the sandbox needs: file rights including
// truncate and device ioctls, TCP bind/connect (4), and the scoping of
// abstract UNIX sockets and signals (6). A kernel offering less refuses.
const MinABI = 6

// Spec is what one sandboxed process may see and do.
type Spec struct {
	// Argv is the program (an absolute path) and its arguments. Empty
	// means a probe: the init sets everything up and exits 0.
	Argv []string
	// Env is the program's whole environment.
	Env []string
	// Workspace is its working directory: read-write when Writable,
	// read-only otherwise. It must be owned by WorkspaceOwner.
	Workspace string
	Writable  bool
	// Root is an empty directory the init mounts its new root file
	// system on (each process gets its own mount namespace, so one
	// directory can serve every process of a call).
	Root string
	// Read are further files and directories the program may read: the
	// plugin's own directory. System paths (systemPathsFor) are added.
	Read []string
	// Hide are directories beneath Read the program sees empty (the
	// system's that hold secrets, hiddenPaths, are added).
	Hide []string
	// Exec are the only files the program (and what it starts) may
	// execute; each must also be readable (under Read or the system
	// paths), or is made so.
	Exec []string
	// Network are the only places the program may connect to. It always
	// gets a network namespace of its own, with no interface but
	// loopback: with Network, loopback is up and holds a listener for
	// each entry, at the entry's address (a name is given a loopback
	// address of its own in the sandbox's /etc/hosts), and the Cmd
	// relays what connects there to the entry itself, dialed from
	// outside by Cmd.Dial. Landlock lets it connect to the entries'
	// ports only, and bind none.
	Network []Destination
	// MaxMemory caps the data memory of the program and of each process
	// it starts (RLIMIT_DATA: heap and private writable mappings, what an
	// allocator takes); an allocation past it fails. 0: no cap. Memory
	// it would not count is refused whatever MaxMemory is (filterSyscalls),
	// but for the program's /dev/shm, a tmpfs of 1 MiB (for Python's
	// multiprocessing locks) whose size is taken from the cap.
	MaxMemory uint64
	// MaxFileSize caps the size of each file the program and what it
	// starts write (RLIMIT_FSIZE): a write past it fails with EFBIG. 0,
	// or more than 256 MiB: 256 MiB.
	MaxFileSize uint64
}

// Destination is one host:port a sandboxed program may connect to: a name
// or an IP address.
type Destination struct {
	Host string
	Port uint16
}

// MaxDestinations is how many destinations a Spec may have: the
// listeners go to outboxd in one message.
const MaxDestinations = 64

// ErrUnavailable is the cause of every error saying this system cannot
// enforce the sandbox.
var ErrUnavailable = errors.New("the kernel cannot enforce the plugin sandbox")

// unavailable wraps why the sandbox cannot run.
func unavailable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnavailable, fmt.Sprintf(format, args...))
}
