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

// denyMultipathTCP installs a seccomp filter that refuses socket(2) with
// IPPROTO_MPTCP (EPROTONOSUPPORT, so a program falls back to TCP) and
// system calls of a foreign architecture or ABI (ENOSYS).
func denyMultipathTCP() error {
	if auditArch == 0 {
		return fmt.Errorf("seccomp: no filter for %s", runtime.GOARCH)
	}
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
		errn = unix.SECCOMP_RET_ERRNO
	)
	filter := []unix.SockFilter{
		{Code: ld, K: 4}, // arch
		{Code: jeq, Jt: 1, K: auditArch},
		{Code: ret, K: errn | uint32(unix.ENOSYS)},
		{Code: ld, K: 0}, // nr
		{Code: jge, Jt: 0, Jf: 1, K: x32Bit},
		{Code: ret, K: errn | uint32(unix.ENOSYS)},
		{Code: jeq, Jt: 0, Jf: 3, K: unix.SYS_SOCKET},
		{Code: ld, K: 32}, // args[2], the protocol (its low half)
		{Code: jeq, Jt: 0, Jf: 1, K: ipprotoMPTCP},
		{Code: ret, K: errn | uint32(unix.EPROTONOSUPPORT)},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}
