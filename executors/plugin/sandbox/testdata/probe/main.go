// probe tries, from inside the sandbox, what its arguments name and
// prints one line for each: "ok" (and what it found) or the error that
// stopped it. It runs in the sandbox in the tests of what the kernel
// refuses there.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// key is the name of the key "key-add" adds and "key-read" reads.
const key = "outboxd-probe"

var probes = map[string]func(arg string) (string, error){
	// an io_uring instance: its operations (open, connect, ...) are not
	// system calls the seccomp filter sees
	"io_uring": func(string) (string, error) {
		var params [120]byte // struct io_uring_params
		fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if errno != 0 {
			return "", fmt.Errorf("io_uring_setup: %w", errno)
		}
		unix.Close(int(fd))
		return "", nil
	},
	// a userfaultfd, with which a program stops the kernel at a page
	// fault of its choosing (what exploits of the kernel's races need)
	"userfaultfd": func(string) (string, error) {
		const userModeOnly = 1 // UFFD_USER_MODE_ONLY, what any user may have
		fd, _, errno := unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC|userModeOnly, 0, 0)
		if errno != 0 {
			return "", fmt.Errorf("userfaultfd: %w", errno)
		}
		unix.Close(int(fd))
		return "", nil
	},
	// a socket of VM sockets (vsock), whose peer is the hypervisor's host
	// or another VM, whatever the network namespace
	"vsock": func(string) (string, error) {
		fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("socket: %w", err)
		}
		unix.Close(fd)
		return "", nil
	},
	// a key of arg in the session keyring
	"key-add": func(arg string) (string, error) {
		_, err := unix.AddKey("user", key, []byte(arg), unix.KEY_SPEC_SESSION_KEYRING)
		if err != nil {
			return "", fmt.Errorf("add_key: %w", err)
		}
		return "", nil
	},
	// the key key-add added
	"key-read": func(string) (string, error) {
		id, err := unix.KeyctlSearch(unix.KEY_SPEC_SESSION_KEYRING, "user", key, 0)
		if err != nil {
			return "", fmt.Errorf("keyctl search: %w", err)
		}
		buf := make([]byte, 256)
		n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
		if err != nil {
			return "", fmt.Errorf("keyctl read: %w", err)
		}
		return string(buf[:min(n, len(buf))]), nil
	},
	// no signal when its parent (outboxd) dies, then a wait for it
	"orphan": func(string) (string, error) {
		err := unix.Prctl(unix.PR_SET_PDEATHSIG, 0, 0, 0, 0)
		fmt.Println("orphan", err)
		time.Sleep(time.Hour)
		return "", nil
	},
	// its own score for the OOM killer, lowered to 0
	"oom-lower": func(string) (string, error) {
		return "", os.WriteFile("/proc/self/oom_score_adj", []byte("0\n"), 0)
	},
	// a nice value of 0, outboxd's
	"nice-lower": func(string) (string, error) {
		return "", unix.Setpriority(unix.PRIO_PROCESS, 0, 0)
	},
	// a POSIX message queue, whose bytes count against a limit per user
	// (RLIMIT_MSGQUEUE) every sandbox of outboxd's user shares, made
	// twice: the second answer says whether the first made it, though
	// it was refused the queue's descriptor
	"mq": func(string) (string, error) {
		name, err := unix.BytePtrFromString("outboxd-probe")
		if err != nil {
			return "", err
		}
		var errs []error
		for range 2 {
			fd, _, errno := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(name)), unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600, 0, 0, 0)
			if errno != 0 {
				errs = append(errs, errno)
				continue
			}
			unix.Close(int(fd))
			errs = append(errs, errors.New("made"))
		}
		return "", fmt.Errorf("mq_open: %v, then %v", errs[0], errs[1])
	},
	// signals queued to itself (a real-time signal it blocks) until the
	// kernel refuses one: each counts against a limit per user
	// (RLIMIT_SIGPENDING), as POSIX timers do
	"sigqueue": func(string) (string, error) {
		runtime.LockOSThread() // the mask is this thread's; it ends with the probe
		const sig = 36         // SIGRTMIN+2
		var set unix.Sigset_t
		set.Val[(sig-1)/64] |= 1 << ((sig - 1) % 64)
		if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil); err != nil {
			return "", fmt.Errorf("sigprocmask: %w", err)
		}
		info := unix.Siginfo{Signo: sig, Code: -1} // SI_QUEUE, as sigqueue(3) sends
		pid, tid := unix.Getpid(), unix.Gettid()
		for n := 0; ; n++ {
			_, _, errno := unix.Syscall6(unix.SYS_RT_TGSIGQUEUEINFO, uintptr(pid), uintptr(tid), sig, uintptr(unsafe.Pointer(&info)), 0, 0)
			if errno != 0 {
				return fmt.Sprintf("%d, then %v", n, errno), nil
			}
		}
	},
	// inotify instances until the kernel refuses one, then watches of
	// files of the workspace in the first until it refuses one (or
	// 10000): both count against limits per user
	"inotify": func(string) (string, error) {
		var fds []int
		defer func() {
			for _, fd := range fds {
				unix.Close(fd)
			}
		}()
		var instances error
		for instances == nil {
			fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
			if err != nil {
				instances = err
				break
			}
			fds = append(fds, fd)
		}
		if len(fds) == 0 {
			return "", fmt.Errorf("inotify_init1: %w", instances)
		}
		watches := 0
		var err error
		for ; watches < 10000; watches++ {
			name := fmt.Sprintf("w%d", watches)
			if err = os.WriteFile(name, nil, 0o600); err != nil {
				break
			}
			if _, err = unix.InotifyAddWatch(fds[0], name, unix.IN_MODIFY); err != nil {
				break
			}
		}
		return fmt.Sprintf("%d instances, then %v; %d watches, then %v", len(fds), instances, watches, err), nil
	},
	// fanotify groups until the kernel refuses one, then marks of files
	// of the workspace in the first until it refuses one (or 10000):
	// both count against limits per user
	"fanotify": func(string) (string, error) {
		var fds []int
		defer func() {
			for _, fd := range fds {
				unix.Close(fd)
			}
		}()
		var groups error
		for groups == nil {
			fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_REPORT_FID|unix.FAN_CLOEXEC, unix.O_RDONLY)
			if err != nil {
				groups = err
				break
			}
			fds = append(fds, fd)
		}
		if len(fds) == 0 {
			return "", fmt.Errorf("fanotify_init: %w", groups)
		}
		marks := 0
		var err error
		for ; marks < 10000; marks++ {
			name := fmt.Sprintf("f%d", marks)
			if err = os.WriteFile(name, nil, 0o600); err != nil {
				break
			}
			if err = unix.FanotifyMark(fds[0], unix.FAN_MARK_ADD, unix.FAN_MODIFY, unix.AT_FDCWD, name); err != nil {
				break
			}
		}
		return fmt.Sprintf("%d groups, then %v; %d marks, then %v", len(fds), groups, marks, err), nil
	},
	// nothing until its standard input ends
	"wait": func(string) (string, error) {
		fmt.Println("waiting")
		_, err := io.Copy(io.Discard, os.Stdin)
		return "", err
	},
	// a user namespace of its own, in which it would have every
	// capability
	// (a process of its own there: this one has threads, which
	// unshare(2) refuses)
	"userns": func(string) (string, error) {
		cmd := exec.Command(os.Args[0])
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}
		if err := cmd.Run(); err != nil {
			var errno syscall.Errno
			if errors.As(err, &errno) {
				return "", fmt.Errorf("clone: %w", errno)
			}
			return "", err
		}
		return "", nil
	},
}

func main() {
	for _, a := range os.Args[1:] {
		name, arg, _ := strings.Cut(a, "=")
		out, err := probes[name](arg)
		switch {
		case err != nil:
			fmt.Println(name, err)
		case out != "":
			fmt.Println(name, "ok", out)
		default:
			fmt.Println(name, "ok")
		}
	}
}
