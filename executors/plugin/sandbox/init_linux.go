package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// init runs the sandbox init when this process was started as one.
func init() {
	raw, ok := os.LookupEnv(envSpec)
	if !ok {
		return
	}
	if os.Getpid() != 1 {
		// Not the first process of a PID namespace Command made: never
		// touch the mounts of whatever namespace this is.
		fmt.Fprintf(os.Stderr, "outboxd: %s is set but this is not a sandbox's init; refusing\n", envSpec)
		os.Exit(127)
	}
	runtime.LockOSThread()
	errPipe := os.NewFile(errFD, "sandbox-errors")
	var spec Spec
	err := json.Unmarshal([]byte(raw), &spec)
	if err == nil {
		err = enter(&spec)
	}
	// enter returns only when it failed, or for a probe.
	if err != nil {
		// The parent reads the errno first, the message after it.
		var errno syscall.Errno
		errors.As(err, &errno)
		fmt.Fprintf(errPipe, "%d %v", int(errno), err)
		os.Exit(127)
	}
	os.Exit(0)
}

// hostname is the sandbox's host name.
const hostname = "sandbox"

// niceness is the program's nice value: the CPU goes to outboxd's own
// processes (nice 0) first.
const niceness = 10

// Rlimits of the program: a sandboxed plugin is small and short-lived.
// The stack's is the usual 8 MiB, soft and hard: RLIMIT_DATA does not
// count the stack, and outboxd's hard limit is often unlimited. Locked
// memory, which the host cannot page out, is 64 KiB (the kernel's
// default before Linux 5.16): enough for the few pages a crypto library
// locks for its keys. RLIMIT_NICE 0 allows no nice value lower than the
// one it has (niceness). RLIMIT_MSGQUEUE 0 allows no POSIX message queue:
// their bytes are counted for outboxd's user, against one budget every
// sandbox shares, and a queue is made (and counted until the sandbox
// ends) even when Landlock then refuses the program its descriptor.
// Pending signals (POSIX timers among them) are counted the same way,
// against a budget outboxd shares too: 1024 leaves the program room for
// its timers and the others theirs. RLIMIT_RTPRIO 0 allows no real-time
// scheduling (SCHED_FIFO, SCHED_RR), whose busy process would take a CPU
// from every other one, outboxd's included: a limit outboxd was started
// with (systemd's LimitRTPRIO, limits.conf) is not the plugin's.
var rlimits = map[int]uint64{
	unix.RLIMIT_RTPRIO:     0,
	unix.RLIMIT_NICE:       0,
	unix.RLIMIT_CORE:       0,
	unix.RLIMIT_MSGQUEUE:   0,
	unix.RLIMIT_SIGPENDING: 1024,
	unix.RLIMIT_NPROC:      256,
	unix.RLIMIT_NOFILE:     1024,
	unix.RLIMIT_FSIZE:      256 << 20,
	unix.RLIMIT_STACK:      8 << 20,
	unix.RLIMIT_MEMLOCK:    64 << 10,
}

// enter sets up the sandbox and execs spec's program.
func enter(spec *Spec) error {
	os.Clearenv()
	asNobody := isMapped(nobody) // read before /proc is gone
	hosts, err := openEgress(spec.Network)
	if err != nil {
		return err
	}
	shm := hasShm(spec) // read before the root changes
	if err := buildRoot(spec, hosts, shm); err != nil {
		return err
	}
	if err := noNamespaces(); err != nil {
		return err
	}
	if err := limitWatches(); err != nil {
		return err
	}
	// Out of memory, the kernel kills a plugin's process before anything
	// else (outboxd, its database); the program may not write to /proc
	// to lower it again (Landlock).
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte("1000\n"), 0); err != nil {
		return fmt.Errorf("oom_score_adj: %w", err)
	}
	// Its processes yield the CPU to outboxd's and its database's (a
	// plugin may start 256, each busy until its timeout); RLIMIT_NICE
	// keeps them from taking a lower nice value back.
	if err := unix.Setpriority(unix.PRIO_PROCESS, 0, niceness); err != nil {
		return fmt.Errorf("setpriority: %w", err)
	}
	// The UTS namespace starts with the host's name: not the program's to
	// know (or send).
	if err := unix.Sethostname([]byte(hostname)); err != nil {
		return fmt.Errorf("sethostname: %w", err)
	}
	for res, limit := range rlimits {
		if err := lower(res, limit); err != nil {
			return err
		}
	}
	if spec.MaxFileSize > 0 {
		if err := lower(unix.RLIMIT_FSIZE, spec.MaxFileSize); err != nil {
			return err
		}
	}
	if err := dropPrivileges(asNobody); err != nil {
		return err
	}
	// Every descriptor but 0-2 closes on exec, the error pipe included.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("close_range: %w", err)
	}
	if err := restrict(spec, shm); err != nil {
		return err
	}
	if err := filterSyscalls(); err != nil {
		return err
	}
	if err := unix.Chdir(spec.Workspace); err != nil {
		return fmt.Errorf("chdir %s: %w", spec.Workspace, err)
	}
	if len(spec.Argv) == 0 {
		return nil // a probe
	}
	return execCapped(spec, shm)
}

// namespaceKinds are the kinds of namespace the program may not make.
var namespaceKinds = []string{"user", "mnt", "pid", "net", "ipc", "uts", "cgroup", "time"}

// noNamespaces sets this user namespace's limits of nested namespaces to
// none: in a user namespace of its own the program would have every
// capability, and with them the parts of the kernel the sandbox keeps
// out of its reach (netfilter, for one); without one it may make no
// other kind. A limit (/proc/sys/user) is this namespace's, and only a
// process with CAP_SYS_RESOURCE in it, the init before it drops its
// capabilities, may raise it again.
func noNamespaces() error {
	for _, kind := range namespaceKinds {
		path := "/proc/sys/user/max_" + kind + "_namespaces"
		if err := os.WriteFile(path, []byte("0\n"), 0); err != nil {
			return fmt.Errorf("limiting nested namespaces: %w", err)
		}
	}
	return nil
}

// watchLimits are this user namespace's limits of inotify instances and
// watches and of fanotify groups and marks. The kernel counts those of a
// sandbox for outboxd's user too, against limits (128 instances, 128
// groups by default) every sandbox, outboxd and, for outboxd as root, the
// host's other services share: without its own, one plugin could take
// them all while it ran. Like the limits of nested namespaces, only the
// init may raise them again.
var watchLimits = map[string]int{
	"max_inotify_instances": 16, "max_inotify_watches": 8192,
	"max_fanotify_groups": 16, "max_fanotify_marks": 8192,
}

// limitWatches sets this user namespace's watchLimits; a limit the kernel
// does not have is of a facility it was built without.
func limitWatches() error {
	for name, limit := range watchLimits {
		f, err := os.OpenFile("/proc/sys/user/"+name, os.O_WRONLY, 0)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err == nil {
			_, err = f.WriteString(strconv.Itoa(limit) + "\n")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return fmt.Errorf("limiting %s: %w", name, err)
		}
	}
	return nil
}

// lower sets resource res's limits to limit, or leaves them where they
// are lower: raising one needs a privilege.
func lower(res int, limit uint64) error {
	var cur unix.Rlimit
	if err := unix.Getrlimit(res, &cur); err != nil {
		return fmt.Errorf("getrlimit %d: %w", res, err)
	}
	lim := unix.Rlimit{Cur: min(limit, cur.Max), Max: min(limit, cur.Max)}
	if err := unix.Setrlimit(res, &lim); err != nil {
		return fmt.Errorf("setrlimit %d: %w", res, err)
	}
	return nil
}

// execCapped execs spec's program with its data memory capped
// (RLIMIT_DATA), less what its /dev/shm may hold. The cap comes last,
// just before the exec: it counts this init's own writable mappings
// too, which its Go runtime may add to until the exec (a race-detector
// build's are far past any cap, and a fatal "out of memory" then ended
// the init with status 2), while the program starts with a fresh
// address space. Nothing between the cap and the exec allocates: the
// arguments and the failure message's buffer are made first, the
// collector is off, and the exec is a raw system call (it also does not
// put back the file limit Go found at start, as syscall.Exec would).
func execCapped(spec *Spec, shm bool) error {
	path, err := syscall.BytePtrFromString(spec.Argv[0])
	if err != nil {
		return fmt.Errorf("exec %q: %w", spec.Argv[0], err)
	}
	argv, err := syscall.SlicePtrFromStrings(spec.Argv)
	if err != nil {
		return fmt.Errorf("exec %q: %w", spec.Argv[0], err)
	}
	envv, err := syscall.SlicePtrFromStrings(spec.Env)
	if err != nil {
		return fmt.Errorf("exec %q: environment: %w", spec.Argv[0], err)
	}
	msg := make([]byte, 0, 128+len(spec.Argv[0]))
	debug.SetGCPercent(-1)
	if data := spec.MaxMemory; data > 0 {
		if shm {
			data -= shmBytes
		}
		if err := lower(unix.RLIMIT_DATA, data); err != nil {
			return err
		}
	}
	_, _, errno := unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(path)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	// The exec failed: report it as the init's other failures are ("errno
	// message"), within the buffer made before the cap.
	msg = strconv.AppendInt(msg, int64(errno), 10)
	msg = append(msg, " exec "...)
	msg = append(msg, spec.Argv[0]...)
	msg = append(msg, ": "...)
	msg = append(msg, errno.Error()...)
	_, _ = unix.Write(errFD, msg)
	unix.Exit(127)
	return nil
}

// The program's /dev/shm, where Python's multiprocessing (POSIX
// semaphores, shm_open) makes its locks: a tmpfs of the sandbox's own,
// gone with it, of shmBytes (taken from the data cap, so that what it
// holds is counted) and at most shmFiles files.
const (
	shmBytes = 1 << 20
	shmFiles = 256
)

// hasShm says whether spec's program gets a /dev/shm: not under a data
// cap too small to take its size from, nor when a path of its own is
// beneath the host's /dev/shm (TMPDIR=/dev/shm puts the workspace
// there), which the tmpfs would hide, and would make writable.
func hasShm(spec *Spec) bool {
	if spec.MaxMemory > 0 && spec.MaxMemory < 2*shmBytes {
		return false
	}
	for _, p := range append(append([]string{spec.Workspace}, spec.Read...), spec.Exec...) {
		if p := resolve(p); p == "/dev/shm" || strings.HasPrefix(p, "/dev/shm/") {
			return false
		}
	}
	return true
}

// buildRoot makes a new root file system holding only the paths the
// program may use, bound from the host at the same places, and hosts as
// its /etc/hosts (none when nil), and pivots into it, with the hidden
// directories (hiddenPaths, Spec.Hide) empty: whatever else
// exists on the host (sockets, /proc, /tmp, the config file, the host's
// name resolution) is not there at all.
func buildRoot(spec *Spec, hosts []byte, shm bool) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	root := spec.Root
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
		return fmt.Errorf("mounting the new root: %w", err)
	}
	paths := append(append([]string(nil), systemPaths...), devices...)
	paths = append(paths, spec.Read...)
	paths = append(paths, spec.Exec...)
	var bound []string
	for _, p := range paths {
		if err := bindInto(root, p, false, &bound); err != nil {
			return err
		}
	}
	if err := bindInto(root, spec.Workspace, spec.Writable, &bound); err != nil {
		return err
	}
	if hosts != nil {
		etc := filepath.Join(root, "etc")
		if err := os.MkdirAll(etc, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(etc, "hosts"), hosts, 0o644); err != nil {
			return fmt.Errorf("writing /etc/hosts: %w", err)
		}
	}
	if shm {
		dir := filepath.Join(root, "dev", "shm")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=1777", shmBytes, shmFiles)
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts); err != nil {
			return fmt.Errorf("mounting /dev/shm: %w", err)
		}
	}
	// A /proc of the new PID namespace: it shows only the sandbox's own
	// processes, and Landlock lets the program read none of it (the
	// Landlock library lists the init's own threads there).
	proc := filepath.Join(root, "proc")
	if err := os.Mkdir(proc, 0o555); err != nil {
		return err
	}
	if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	hidden := hide(spec)
	if err := unix.Chdir(root); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	// Paths are the new root's now: one that is not a directory there
	// (it does not exist, or a link leads outside) hides nothing.
	for _, p := range hidden {
		if info, err := os.Stat(p); err != nil || !info.IsDir() {
			continue
		}
		if err := unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0755"); err != nil {
			return fmt.Errorf("hiding %s: %w", p, err)
		}
	}
	return readOnly("/")
}

// hide returns the directories the program sees empty: hiddenPaths and
// spec.Hide, but none that holds a path of the program's own (its
// package, an executable, its workspace), which the administrator put
// there.
func hide(spec *Spec) []string {
	own := append(append([]string{spec.Workspace}, spec.Read...), spec.Exec...)
	var out []string
next:
	for _, h := range append(append([]string(nil), hiddenPaths...), spec.Hide...) {
		for _, p := range own {
			if p, h := resolve(p), resolve(h); p == h || strings.HasPrefix(p, h+"/") {
				continue next
			}
		}
		out = append(out, h)
	}
	return out
}

// resolve returns p with its symbolic links resolved, or p when it
// cannot be.
func resolve(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// bindInto puts the host's path p at root+p, unless it is beneath a
// path bound already: a top-level symbolic link (/bin -> usr/bin) as the
// same link, anything else resolved and bound where it resolves to. A
// path that does not exist is left out.
func bindInto(root, p string, writable bool, bound *[]string) error {
	info, err := os.Lstat(p)
	if err != nil {
		return nil
	}
	if info.Mode()&os.ModeSymlink != 0 && strings.Count(p, "/") == 1 {
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		return os.Symlink(target, filepath.Join(root, p))
	}
	if p, err = filepath.EvalSymlinks(p); err != nil {
		return nil
	}
	for _, b := range *bound {
		if p == b || strings.HasPrefix(p, b+"/") {
			return nil // there already
		}
	}
	if info, err = os.Stat(p); err != nil {
		return nil
	}
	dst := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if info.IsDir() {
		err = os.Mkdir(dst, 0o755)
	} else {
		err = os.WriteFile(dst, nil, 0o644)
	}
	if err != nil && !os.IsExist(err) {
		return err
	}
	if err := unix.Mount(p, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("binding %s: %w", p, err)
	}
	*bound = append(*bound, p)
	if writable {
		return nil
	}
	if err := readOnly(dst); err != nil {
		return fmt.Errorf("binding %s read-only: %w", p, err)
	}
	return nil
}

// readOnly remounts the mount at path read-only, keeping the flags it
// has (the kernel refuses to drop those a less privileged namespace
// inherited locked). Landlock already refuses writes there; read-only
// also refuses what Landlock does not cover, such as chmod.
func readOnly(path string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return err
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY)
	for st_, ms := range map[int64]uintptr{
		unix.ST_NOSUID: unix.MS_NOSUID, unix.ST_NODEV: unix.MS_NODEV, unix.ST_NOEXEC: unix.MS_NOEXEC,
		unix.ST_NOATIME: unix.MS_NOATIME, unix.ST_NODIRATIME: unix.MS_NODIRATIME, unix.ST_RELATIME: unix.MS_RELATIME,
	} {
		if st.Flags&st_ != 0 {
			flags |= ms
		}
	}
	return unix.Mount("", path, "", flags, "")
}

// dropPrivileges leaves the program no capability (an empty bounding set,
// no ambient or inheritable ones) and, when outboxd runs as root, makes
// it nobody.
func dropPrivileges(asNobody bool) error {
	for c := 0; c <= 63; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			break // past the last capability this kernel knows
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	if asNobody {
		if err := unix.Setgroups(nil); err != nil {
			return fmt.Errorf("setgroups: %w", err)
		}
		if err := unix.Setresgid(nobody, nobody, nobody); err != nil {
			return fmt.Errorf("setresgid: %w", err)
		}
		if err := unix.Setresuid(nobody, nobody, nobody); err != nil {
			return fmt.Errorf("setresuid: %w", err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	// A change of user clears the parent-death signal: set it again.
	return unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
}

// isMapped says whether uid exists in this user namespace: the parent
// maps nobody only when it runs as root.
func isMapped(uid int) bool {
	raw, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(raw), "\n") {
		var inside, outside, n int
		if _, err := fmt.Sscan(line, &inside, &outside, &n); err == nil && uid >= inside && uid < inside+n {
			return true
		}
	}
	return false
}

// Rights of the Landlock rules.
const (
	readRights  = llsyscall.AccessFSReadFile | llsyscall.AccessFSReadDir
	writeRights = llsyscall.AccessFSWriteFile | llsyscall.AccessFSRemoveDir | llsyscall.AccessFSRemoveFile |
		llsyscall.AccessFSMakeDir | llsyscall.AccessFSMakeReg | llsyscall.AccessFSMakeSock | llsyscall.AccessFSMakeFifo |
		llsyscall.AccessFSMakeSym | llsyscall.AccessFSRefer | llsyscall.AccessFSTruncate
	// fileRights are those that apply to a file (the others only to a
	// directory, for what is beneath it).
	fileRights = llsyscall.AccessFSExecute | llsyscall.AccessFSWriteFile | llsyscall.AccessFSReadFile |
		llsyscall.AccessFSTruncate | llsyscall.AccessFSIoctlDev
)

// restrict applies Landlock: reading the system paths, /etc/hosts, the
// Read paths and the workspace; writing only in /dev/shm and a Writable
// workspace (never executing there); executing only the Exec files; TCP
// connect only to the ports of Network, bind nowhere; no abstract UNIX
// socket or signal outside the sandbox. It refuses when the kernel offers less
// than MinABI.
func restrict(spec *Spec, shm bool) error {
	read := append(append([]string(nil), systemPaths...), "/etc/hosts")
	read = append(read, spec.Read...)
	var rules []landlock.Rule
	grant := func(rights landlock.AccessFSSet, paths ...string) {
		for _, p := range paths {
			info, err := os.Stat(p)
			if err != nil {
				continue // not there
			}
			own := rights
			if !info.IsDir() {
				own &= fileRights
			}
			rules = append(rules, landlock.PathAccess(own, p))
		}
	}
	grant(readRights, read...)
	grant(llsyscall.AccessFSReadFile|llsyscall.AccessFSWriteFile|llsyscall.AccessFSTruncate, devices[0])
	grant(llsyscall.AccessFSReadFile, devices[1:]...)
	grant(llsyscall.AccessFSExecute|llsyscall.AccessFSReadFile, spec.Exec...)
	if shm {
		grant(readRights|writeRights, "/dev/shm")
	}
	work := landlock.AccessFSSet(readRights)
	if spec.Writable {
		work |= writeRights
	}
	grant(work, spec.Workspace)
	for _, d := range spec.Network {
		rules = append(rules, landlock.ConnectTCP(d.Port))
	}
	cfg := landlock.V6 // not best effort: refuse on an older kernel
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}
