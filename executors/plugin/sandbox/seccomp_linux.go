package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ipprotoMPTCP is IPPROTO_MPTCP: Landlock's TCP rules do not cover
// Multipath TCP sockets, so the program may not create any.
const ipprotoMPTCP = 262

// x32Bit marks the x32 system call numbers on amd64, which would get
// around a filter written for the native numbers.
const x32Bit = 0x40000000

// auditArch is this architecture's AUDIT_ARCH value; a system call made
// for another architecture is refused.
var auditArch = map[string]uint32{"amd64": 0xc000003e, "arm64": 0xc00000b7}[runtime.GOARCH]

// unimplemented are the system calls the program gets ENOSYS from, as
// from a kernel built without them, and programs fall back (libffi to a
// file, an event loop from io_uring to epoll, for instance):
//   - those that make memory RLIMIT_DATA does not count (a memory file,
//     System V shared memory, and the kernel memory of System V
//     semaphores and message queues);
//   - io_uring's: the operations of its rings (open, socket, connect)
//     are not system calls, so this filter would not see them;
//   - the kernel keyrings': they are not namespaced, and the session
//     keyring outboxd has (systemd gives each service one) is every
//     sandbox's, where one call could leave what it read for another;
//   - userfaultfd: no plugin needs it, and with it a program stops the
//     kernel at a page fault of its choosing, what exploits of the
//     kernel's races use.
var unimplemented = []uint32{unix.SYS_MEMFD_CREATE, unix.SYS_MEMFD_SECRET, unix.SYS_SHMGET, unix.SYS_SEMGET, unix.SYS_MSGGET,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_KEYCTL, unix.SYS_USERFAULTFD}

// filterSyscalls installs a seccomp filter that refuses:
//   - system calls of a foreign architecture or ABI (ENOSYS);
//   - socket(2) of a family other than UNIX, IPv4, IPv6 and netlink
//     (EAFNOSUPPORT): the network namespace and Landlock govern those,
//     not others such as VM sockets (vsock), whose peer is the
//     hypervisor's host whatever the namespace;
//   - socket(2) with IPPROTO_MPTCP (EPROTONOSUPPORT, so a program falls
//     back to TCP);
//   - a shared anonymous mmap(2) (ENOMEM, as past the memory cap): its
//     memory is not data, so RLIMIT_DATA would not count it. A shared
//     mapping of a file works: only the workspace and /dev/shm are
//     writable, and their limits count what they hold;
//   - an mmap(2) that grows down (MAP_GROWSDOWN, ENOMEM): the kernel
//     counts it as stack, not data, and RLIMIT_STACK bounds only how far
//     a stack grows, not the size it is mapped with;
//   - a parent-death signal other than SIGKILL (prctl PR_SET_PDEATHSIG):
//     the call answers 0 and does nothing. The init set SIGKILL, so that
//     the program (PID 1 of its namespace, and everything with it) ends
//     when outboxd does, however outboxd ends; without it, it would
//     outlive outboxd, with no timeout and no measure of its workspace.
//     A process it starts that asks for another signal is not sent it
//     when its parent dies, and ends with the sandbox at the latest;
//   - the unimplemented system calls (ENOSYS): memory it would not
//     count, io_uring, the keyrings and userfaultfd.
func filterSyscalls() error {
	if auditArch == 0 {
		return fmt.Errorf("seccomp: no filter for %s", runtime.GOARCH)
	}
	const (
		ld     = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		and    = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
		jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge    = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset   = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret    = unix.BPF_RET | unix.BPF_K
		errn   = unix.SECCOMP_RET_ERRNO
		shared = unix.MAP_SHARED | unix.MAP_ANONYMOUS
		// Offsets in struct seccomp_data; an argument's is its low half
		// (both architectures are little-endian).
		nr, arch, arg0, arg1, arg2, arg3 = 0, 4, 16, 24, 32, 40
	)
	filter := []unix.SockFilter{
		{Code: ld, K: arch},
		{Code: jeq, Jt: 1, K: auditArch},
		{Code: ret, K: errn | uint32(unix.ENOSYS)},
		{Code: ld, K: nr},
		{Code: jge, Jt: 0, Jf: 1, K: x32Bit},
		{Code: ret, K: errn | uint32(unix.ENOSYS)},
		// socket(domain of socketFamilies or not, type, IPPROTO_MPTCP)
		{Code: jeq, Jt: 0, Jf: 9, K: unix.SYS_SOCKET},
		{Code: ld, K: arg0},
		{Code: jeq, Jt: 4, K: unix.AF_UNIX},
		{Code: jeq, Jt: 3, K: unix.AF_INET},
		{Code: jeq, Jt: 2, K: unix.AF_INET6},
		{Code: jeq, Jt: 1, K: unix.AF_NETLINK},
		{Code: ret, K: errn | uint32(unix.EAFNOSUPPORT)},
		{Code: ld, K: arg2},
		{Code: jeq, Jt: 0, Jf: 1, K: ipprotoMPTCP},
		{Code: ret, K: errn | uint32(unix.EPROTONOSUPPORT)},
		{Code: ld, K: nr},
		// mmap(addr, length, prot, flags with MAP_GROWSDOWN, or with
		// MAP_SHARED and MAP_ANONYMOUS, ...); MAP_SHARED_VALIDATE has the
		// MAP_SHARED bit too
		{Code: jeq, Jt: 0, Jf: 5, K: unix.SYS_MMAP},
		{Code: ld, K: arg3},
		{Code: jset, Jt: 2, K: unix.MAP_GROWSDOWN},
		{Code: and, K: shared},
		{Code: jeq, Jt: 0, Jf: 1, K: shared},
		{Code: ret, K: errn | uint32(unix.ENOMEM)},
		{Code: ld, K: nr},
		// prctl(PR_SET_PDEATHSIG, a signal other than SIGKILL): done
		// without doing it
		{Code: jeq, Jt: 0, Jf: 5, K: unix.SYS_PRCTL},
		{Code: ld, K: arg0},
		{Code: jeq, Jt: 0, Jf: 3, K: unix.PR_SET_PDEATHSIG},
		{Code: ld, K: arg1},
		{Code: jeq, Jt: 1, K: uint32(unix.SIGKILL)},
		{Code: ret, K: errn}, // errno 0: success
		{Code: ld, K: nr},
	}
	for _, n := range unimplemented {
		filter = append(filter,
			unix.SockFilter{Code: jeq, Jt: 0, Jf: 1, K: n},
			unix.SockFilter{Code: ret, K: errn | uint32(unix.ENOSYS)})
	}
	filter = append(filter, unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW})
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}
