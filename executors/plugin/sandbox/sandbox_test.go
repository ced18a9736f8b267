package sandbox_test

import (
	"bufio"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/outboxd/outboxd/executors/plugin/sandbox"
)

// spec returns a spec with a fresh workspace and root for argv.
func spec(t *testing.T, argv ...string) *sandbox.Spec {
	t.Helper()
	base := t.TempDir()
	s := &sandbox.Spec{Argv: argv, Workspace: filepath.Join(base, "work"), Root: filepath.Join(base, "root"), Writable: true}
	require.NoError(t, os.Mkdir(s.Workspace, 0o700))
	require.NoError(t, os.Mkdir(s.Root, 0o700))
	uid, gid := sandbox.WorkspaceOwner()
	require.NoError(t, os.Chown(s.Workspace, uid, gid))
	return s
}

func run(t *testing.T, s *sandbox.Spec) (string, error) {
	t.Helper()
	cmd, err := sandbox.Command(context.Background(), s)
	require.NoError(t, err)
	var out strings.Builder
	cmd.Stdout = &out
	require.NoError(t, cmd.Start())
	err = cmd.Wait()
	return out.String(), err
}

// The probe passes on this machine, whose kernel offers what it needs.
func TestAvailable(t *testing.T) {
	require.NoError(t, sandbox.Available())
}

// A program outside Exec is refused by the kernel; the init reports it as
// a SetupError carrying the errno, so the caller tells "could not run"
// from "ran and failed".
func TestCommand_ExecOnlyWhatIsListed(t *testing.T) {
	sh, err := filepath.EvalSymlinks("/bin/sh")
	require.NoError(t, err)
	s := spec(t, "/bin/sh", "-c", "echo hello")
	_, err = run(t, s)
	var se *sandbox.SetupError
	require.ErrorAs(t, err, &se)
	require.ErrorIs(t, err, syscall.EACCES)
	require.Contains(t, se.Msg, "exec /bin/sh")

	// The same under a data cap, which the init sets just before the exec:
	// the refusal still arrives (a race-detector build is far past the cap).
	s = spec(t, "/bin/sh", "-c", "echo hello")
	s.MaxMemory = 64 << 20
	_, err = run(t, s)
	require.ErrorAs(t, err, &se)
	require.ErrorIs(t, err, syscall.EACCES)
	require.Equal(t, "exec /bin/sh: permission denied", se.Msg)

	// The shell, and the dynamic loader the kernel executes for it.
	s = spec(t, "/bin/sh", "-c", "echo hello; exit 3")
	s.Exec = []string{"/bin/sh", loader(t, sh)}
	out, err := run(t, s)
	require.Equal(t, "hello\n", out, "%s runs once listed", sh)
	var exit interface{ ExitCode() int }
	require.True(t, errors.As(err, &exit), "%v", err)
	require.Equal(t, 3, exit.ExitCode())
}

// loader returns the ELF interpreter of the program at path.
func loader(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			_, err := p.ReadAt(b, 0)
			require.NoError(t, err)
			return strings.TrimRight(string(b), "\x00")
		}
	}
	t.Fatalf("%s has no ELF interpreter", path)
	return ""
}

// The program runs with the sandbox's rlimits. Its stack is bounded
// whatever outboxd's hard limit (often unlimited, as here): a program
// could raise its own limit to that and grow its stack, which
// RLIMIT_DATA does not count, past plugins.max_memory_bytes. So is the
// memory it may lock, which the host cannot page out (8 MiB by default,
// often unlimited for root). So is its real-time priority: with one, a
// busy program would take a CPU from everyone, outboxd included.
func TestCommand_Rlimits(t *testing.T) {
	sh, err := filepath.EvalSymlinks("/bin/sh")
	require.NoError(t, err)
	var stack syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_STACK, &stack))
	unlimited := stack
	unlimited.Max = ^uint64(0) // RLIM_INFINITY
	if err := syscall.Setrlimit(syscall.RLIMIT_STACK, &unlimited); err == nil {
		t.Cleanup(func() { require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_STACK, &stack)) })
	}
	// An RLIMIT_RTPRIO outboxd was given. Root may raise its own, but not
	// without CAP_SYS_RESOURCE (as in some containers): there the program
	// inherits 0 and this checks only that it has no more.
	var rtprio unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_RTPRIO, &rtprio))
	if err := unix.Setrlimit(unix.RLIMIT_RTPRIO, &unix.Rlimit{Cur: 50, Max: 50}); err == nil {
		t.Cleanup(func() { require.NoError(t, unix.Setrlimit(unix.RLIMIT_RTPRIO, &rtprio)) })
	}
	// Those every sh knows by the same letters and units.
	s := spec(t, "/bin/sh", "-c", "echo $(ulimit -n) $(ulimit -H -n) $(ulimit -c) $(ulimit -s) $(ulimit -H -s) $(ulimit -l) $(ulimit -H -l) $(ulimit -r) $(ulimit -H -r)")
	s.Exec = []string{"/bin/sh", loader(t, sh)}
	out, err := run(t, s)
	require.NoError(t, err)
	require.Equal(t, "1024 1024 0 8192 8192 64 64 0 0\n", out)
}

// echoLines accepts connections and answers each line with itself.
func echoLines(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, err := bufio.NewReader(c).ReadString('\n')
				if err == nil {
					_, _ = c.Write([]byte(line))
				}
			}()
		}
	}()
	return ln
}

// With Network, the program reaches its destinations (by name, by an
// address of any kind) through the Cmd's Dial, and nothing else: not
// another address or port, not another name, not UDP.
func TestCommand_NetworkReachesOnlyItsDestinations(t *testing.T) {
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	bash, err = filepath.EvalSymlinks(bash)
	require.NoError(t, err)
	echo := echoLines(t)
	// What the test's own network would answer on the ports the program
	// tries without them being its destinations.
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer udp.Close()

	dests := []sandbox.Destination{{Host: "api.example.com", Port: 443}, {Host: "93.184.215.14", Port: 8443}, {Host: "127.0.0.1", Port: 9000},
		{Host: "API.Example.com.", Port: 443}, {Host: "::ffff:93.184.215.14", Port: 8443}} // the same again: one listener each
	ipv6 := false
	if _, err := os.Stat("/proc/net/if_inet6"); err == nil {
		ipv6 = true
		dests = append(dests, sandbox.Destination{Host: "2001:db8::7", Port: 443})
	}
	script := `try() { if exec 3<>"/dev/tcp/$1/$2"; then echo "ping $1" >&3; read -r -t 5 line <&3; echo "$1:$2 $line"; exec 3<&-; else echo "$1:$2 refused"; fi; }
try api.example.com 443; try API.Example.COM 443; try api.example.com. 443; try 93.184.215.14 8443; try 127.0.0.1 9000
try 93.184.215.14 9000; try 127.0.0.2 9000; try 127.0.0.1 443; try other.example.com 443; try 10.0.0.1 443
echo leak > /dev/udp/127.0.0.1/` + strconv.Itoa(udp.LocalAddr().(*net.UDPAddr).Port) + ` || true
if [ -n "$IPV6" ]; then try 2001:db8::7 443; try 2001:db8::8 443; fi`
	s := spec(t, bash, "-c", script)
	s.Exec = []string{bash, loader(t, bash)}
	s.Network = dests
	if ipv6 {
		s.Env = []string{"IPV6=1"}
	}
	cmd, err := sandbox.Command(context.Background(), s)
	require.NoError(t, err)
	var mu sync.Mutex
	var dialed []string
	cmd.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, address)
		mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, network, echo.Addr().String())
	}
	var out strings.Builder
	cmd.Stdout = &out
	require.NoError(t, cmd.Start())
	require.NoError(t, cmd.Wait(), out.String())

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"api.example.com:443 ping api.example.com", "API.Example.COM:443 ping API.Example.COM", "api.example.com.:443 ping api.example.com.",
		"93.184.215.14:8443 ping 93.184.215.14", "127.0.0.1:9000 ping 127.0.0.1",
		"93.184.215.14:9000 refused", "127.0.0.2:9000 refused", "127.0.0.1:443 refused",
		"other.example.com:443 refused", "10.0.0.1:443 refused",
	}
	wantDialed := []string{"api.example.com:443", "api.example.com:443", "api.example.com:443", "93.184.215.14:8443", "127.0.0.1:9000"}
	if ipv6 {
		want = append(want, "2001:db8::7:443 ping 2001:db8::7", "2001:db8::8:443 refused")
		wantDialed = append(wantDialed, "[2001:db8::7]:443")
	}
	require.Equal(t, want, lines)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, wantDialed, dialed, "each connection is dialed as the destination it reached")
	require.NoError(t, udp.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
	_, _, err = udp.ReadFrom(make([]byte, 16))
	require.Error(t, err, "no datagram leaves the sandbox")
}

// memhog builds testdata/memhog, a program that holds memory in a way
// its argument names, where the sandbox's user can run it.
func memhog(t *testing.T) string { return testProgram(t, "memhog") }

// testProgram builds testdata/name where the sandbox's user can run it.
func testProgram(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, name)
	// go test puts its own go first in PATH.
	build := exec.Command("go", "build", "-o", bin, "./testdata/"+name)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// A program's memory is capped however it holds it, not only as data
// (RLIMIT_DATA): memory shared or in a file of its own was not counted,
// and a program capped at 128 MiB held 512 MiB in a memory file or a
// shared mapping, detached System V segments or semaphores, or a private
// mapping that grows down, which the kernel counts as stack (the Go
// runtime of memhog takes about 45 MiB of the cap). Those are
// refused (ENOMEM for a shared anonymous mapping or one that grows down,
// ENOSYS for the system calls, as on a kernel built without them), while
// a shared mapping of a file in its workspace, which the workspace's
// limits count, still works.
func TestCommand_MemoryIsCappedHoweverHeld(t *testing.T) {
	bin := memhog(t)
	hold := func(mib int, way string) string {
		s := spec(t, bin, strconv.Itoa(mib), way)
		s.Exec = []string{bin}
		s.MaxMemory = 128 << 20
		out, err := run(t, s)
		require.NoError(t, err, out)
		return strings.TrimSpace(out)
	}
	require.Equal(t, "32 <nil>", hold(32, "private"), "within the cap")
	require.Equal(t, "32 <nil>", hold(32, "file-mapped"), "a file of its workspace, mapped shared")
	require.Regexp(t, `^[0-9]+ mmap: cannot allocate memory$`, hold(512, "private"), "past the cap")

	require.Equal(t, "0 mmap: cannot allocate memory", hold(512, "shared"))
	require.Equal(t, "0 mmap: cannot allocate memory", hold(512, "growsdown"))
	require.Equal(t, "0 memfd_create: function not implemented", hold(512, "memfd"))
	require.Equal(t, "0 memfd_create: function not implemented", hold(512, "memfd-mapped"))
	require.Equal(t, "0 shmget: function not implemented", hold(512, "sysv-shm"))
	require.Equal(t, "0 semget: function not implemented", hold(512, "sysv-sem"))
}

// Directories that hold secrets beneath the paths a program may read
// (private keys in /etc/ssl, local configuration in /usr/local, or a
// Spec's Hide) are empty in the sandbox: a key there that outboxd's user
// may read, as it may when outboxd runs as that user, was readable.
func TestCommand_HiddenDirectoriesAreEmpty(t *testing.T) {
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	bash, err = filepath.EvalSymlinks(bash)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "private"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "private", "key"), []byte("secret"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "public"), []byte("public"), 0o644))

	s := spec(t, bash, "-c", `shopt -s nullglob; echo "$(< "$1/public")"; echo "key: $(< "$1/private/key")"
for d in /etc/ssl/private /usr/local/etc; do f=("$d"/*); echo "$d: ${#f[@]}"; done`, "bash", dir)
	s.Exec = []string{bash, loader(t, bash)}
	s.Read = []string{dir}
	s.Hide = []string{filepath.Join(dir, "private")}
	out, err := run(t, s)
	require.NoError(t, err)
	require.Equal(t, "public\nkey: \n/etc/ssl/private: 0\n/usr/local/etc: 0\n", out)

	// A directory holding the program's own paths is not hidden: the
	// administrator put them there.
	s.Hide = []string{dir}
	out, err = run(t, s)
	require.NoError(t, err)
	require.Equal(t, "public\nkey: secret\n/etc/ssl/private: 0\n/usr/local/etc: 0\n", out)
}

// The program sees a host name of its own, not the host's.
func TestCommand_HostName(t *testing.T) {
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	bash, err = filepath.EvalSymlinks(bash)
	require.NoError(t, err)
	s := spec(t, bash, "-c", "echo $HOSTNAME")
	s.Exec = []string{bash, loader(t, bash)}
	out, err := run(t, s)
	require.NoError(t, err)
	require.Equal(t, "sandbox\n", out)
}

// The program may list the directories it may read, its own package's
// included: the right to list them was dropped for every path granted
// after the first file of the list (/etc/ld.so.cache), so a program
// could not list /etc/ssl/certs or its package, and Python, which lists
// a directory to import from it, found no module of its package.
func TestCommand_ReadDirectoriesCanBeListed(t *testing.T) {
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	bash, err = filepath.EvalSymlinks(bash)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	for _, name := range []string{"a.txt", "b.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
	}
	s := spec(t, bash, "-c", `shopt -s nullglob; f=("$1"/*); echo "${f[@]##*/}"`, "bash", dir)
	s.Exec = []string{bash, loader(t, bash)}
	s.Read = []string{dir}
	out, err := run(t, s)
	require.NoError(t, err)
	require.Equal(t, "a.txt b.txt\n", out)
}

// probe runs testdata/probe in the sandbox with args and returns its
// lines.
func probe(t *testing.T, bin string, args ...string) string {
	t.Helper()
	s := spec(t, append([]string{bin}, args...)...)
	s.Exec = []string{bin}
	out, err := run(t, s)
	require.NoError(t, err, out)
	return strings.TrimSpace(out)
}

// A workspace beneath the host's /dev/shm (TMPDIR=/dev/shm) is left as
// it is: the program's own /dev/shm would hide it (the run could not
// even start there) and make it writable, so it gets none.
func TestCommand_WorkspaceBeneathDevShm(t *testing.T) {
	sh, err := filepath.EvalSymlinks("/bin/sh")
	require.NoError(t, err)
	if info, err := os.Stat("/dev/shm"); err != nil || !info.IsDir() {
		t.Skip("SKIPPED LOUDLY: this host has no /dev/shm")
	}
	t.Setenv("TMPDIR", "/dev/shm")
	s := spec(t, "/bin/sh", "-c", "echo written > f && read -r line < f && echo $line")
	s.Exec = []string{"/bin/sh", loader(t, sh)}
	out, err := run(t, s)
	require.NoError(t, err)
	require.Equal(t, "written\n", out)

	s = spec(t, "/bin/sh", "-c", "echo written > f || echo refused")
	s.Exec = []string{"/bin/sh", loader(t, sh)}
	s.Writable = false
	out, err = run(t, s)
	require.NoError(t, err)
	require.Equal(t, "refused\n", out)
}

// A program ends when outboxd does, however outboxd ends: killed (by
// the OOM killer, a deploy's SIGKILL), its sandboxes' programs get
// SIGKILL from the kernel. A program could ask for no signal, and
// outlive outboxd with no timeout and its workspace measured by none;
// it is told yes, and still ends. The test's helper process stands in
// for outboxd.
func TestCommand_ProgramEndsWithOutboxd(t *testing.T) {
	bin := testProgram(t, "probe")
	helper := exec.Command(os.Args[0], "-test.run=^TestHelper_Orphan$", "-test.count=1")
	helper.Env = append(os.Environ(), "OUTBOXD_TEST_ORPHAN="+bin)
	out, err := helper.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, helper.Start())
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
	lines := bufio.NewScanner(out)
	var pid int
	for pid == 0 && lines.Scan() {
		if n, ok := strings.CutPrefix(lines.Text(), "program "); ok {
			pid, err = strconv.Atoi(n)
			require.NoError(t, err)
		}
	}
	require.NotZero(t, pid, "the helper started the program")
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	require.NoError(t, helper.Process.Kill())
	_ = helper.Wait()
	// A guard, not a timing: the kernel kills it as the helper exits.
	for range 600 {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the program (pid %d) outlived the process that started it", pid)
}

// TestHelper_Orphan is TestCommand_ProgramEndsWithOutboxd's helper: it
// starts the probe that asks for no signal and, once it asked, prints
// its pid and waits to be killed.
func TestHelper_Orphan(t *testing.T) {
	bin := os.Getenv("OUTBOXD_TEST_ORPHAN")
	if bin == "" {
		t.Skip("the helper of TestCommand_ProgramEndsWithOutboxd")
	}
	s := spec(t, bin, "orphan")
	s.Exec = []string{bin}
	cmd, err := sandbox.Command(context.Background(), s)
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "orphan")
	fmt.Printf("program %d\n", cmd.Process.Pid)
	select {}
}

// Out of memory, the kernel kills a plugin's processes first: a plugin
// that starts many processes, each within its cap, could run the host
// out of memory, and the kernel then killed whatever was largest,
// outboxd or its database as likely as the plugin.
func TestCommand_KilledFirstOutOfMemory(t *testing.T) {
	adj := probeWhileWaiting(t, "oom-lower", "oom-lower open /proc/self/oom_score_adj: permission denied\n", "oom_score_adj")
	require.Equal(t, "1000\n", string(adj))
}

// probeWhileWaiting runs the probe program with probe and then "wait" in
// a sandbox, requires probe's line to be want (what the plugin got when it
// tried), and returns the sandboxed process's /proc/<pid>/<file> read
// from outside while it waits.
func probeWhileWaiting(t *testing.T, probe, want, file string) []byte {
	t.Helper()
	bin := testProgram(t, "probe")
	s := spec(t, bin, probe, "wait")
	s.Exec = []string{bin}
	cmd, err := sandbox.Command(context.Background(), s)
	require.NoError(t, err)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewReader(stdout)
	line, err := lines.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, want, line, "it may not change it")
	line, err = lines.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "waiting\n", line)
	content, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/" + file)
	require.NoError(t, stdin.Close())
	require.NoError(t, cmd.Wait())
	require.NoError(t, err)
	return content
}

// A plugin's processes have nice value 10, which they may not lower: the
// CPU goes to outboxd and its database first, however many busy
// processes a plugin starts.
func TestCommand_YieldsTheCPU(t *testing.T) {
	stat := probeWhileWaiting(t, "nice-lower", "nice-lower permission denied\n", "stat")
	// the fields after the command's name: state is the first, nice the 17th
	_, fields, _ := strings.Cut(string(stat), ") ")
	require.Equal(t, "10", strings.Fields(fields)[16])
}

// io_uring is refused (ENOSYS, as from a kernel built without it): the
// operations of its rings (opening files, making sockets, connecting)
// are not system calls, so the seccomp filter never saw them.
func TestCommand_IoUringIsRefused(t *testing.T) {
	bin := testProgram(t, "probe")
	require.Equal(t, "io_uring io_uring_setup: function not implemented", probe(t, bin, "io_uring"))
}

// A socket is of the families the sandbox's network namespace and
// Landlock govern, or of UNIX or netlink, no other: a VM socket (vsock),
// which no network namespace confines, could reach the services of the
// hypervisor's host from a sandbox that declared no network, outside the
// egress relay.
func TestCommand_SocketFamiliesAreLimited(t *testing.T) {
	bin := testProgram(t, "probe")
	require.Equal(t, "vsock socket: address family not supported by protocol", probe(t, bin, "vsock"))
}

// userfaultfd is refused (ENOSYS): no plugin needs it, and with it a
// program stops the kernel at a page fault of its choosing, what
// exploits of the kernel's races use.
func TestCommand_UserfaultfdIsRefused(t *testing.T) {
	bin := testProgram(t, "probe")
	require.Equal(t, "userfaultfd userfaultfd: function not implemented", probe(t, bin, "userfaultfd"))
}

// The kernel's keyrings are refused (ENOSYS): they are not namespaced,
// and every sandbox inherited outboxd's session keyring (one systemd
// gives each service), where one call's plugin could leave what it
// read (another organization's parameters) for a later call to find,
// without network or a writable file system. The test joins a session
// keyring of its own, as systemd's services have.
func TestCommand_KeyringsAreRefused(t *testing.T) {
	bin := testProgram(t, "probe")
	runtime.LockOSThread() // the keyring is this thread's; never unlocked, the thread ends with the test
	_, err := unix.KeyctlJoinSessionKeyring("outboxd-test")
	require.NoError(t, err)
	require.Equal(t, "key-add add_key: function not implemented", probe(t, bin, "key-add=from-the-first-call"))
	require.Equal(t, "key-read keyctl search: function not implemented", probe(t, bin, "key-read"))
}

// The program may not make namespaces of its own: in a user namespace
// of its own it had every capability, and with them the kernel's most
// exposed parts (its netfilter, for one) that the sandbox keeps out of
// its reach.
func TestCommand_NoNestedNamespaces(t *testing.T) {
	bin := testProgram(t, "probe")
	require.Equal(t, "userns clone: no space left on device", probe(t, bin, "userns"))
}

// A program has a /dev/shm of its own, which Python's multiprocessing
// needs for its locks (POSIX semaphores): a small one, whose size is
// taken from the data cap, so memory there is counted as the rest.
func TestCommand_SharedMemoryDirectoryIsSmallAndCounted(t *testing.T) {
	python, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		t.Skip("SKIPPED LOUDLY: /usr/bin/python3 is not installed; the test runs Python's multiprocessing")
	}
	if tmp := resolved(t, os.TempDir()); tmp == "/dev/shm" || strings.HasPrefix(tmp, "/dev/shm/") {
		t.Skip("SKIPPED LOUDLY: TMPDIR is beneath /dev/shm, where a workspace gets no /dev/shm of its own")
	}
	s := spec(t, python, "-c", `import errno, multiprocessing, resource, sys
sys.stderr = sys.stdout
lock = multiprocessing.Lock()
with lock:
    print("locked")
try:
    with open("/dev/shm/big", "wb") as f:
        f.write(b"x" * (2 << 20))
    print("wrote 2 MiB")
except OSError as e:
    print("full" if e.errno == errno.ENOSPC else e)
print(resource.getrlimit(resource.RLIMIT_DATA)[0] >> 20)`)
	s.Exec = []string{python, loader(t, python)}
	s.MaxMemory = 256 << 20
	out, err := run(t, s)
	require.NoError(t, err, out)
	require.Equal(t, "locked\nfull\n255\n", out)
}

// resolved returns path with its links resolved.
func resolved(t *testing.T, path string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(path)
	require.NoError(t, err)
	return r
}

// A program may make no POSIX message queue (RLIMIT_MSGQUEUE 0): their
// bytes count against one budget for outboxd's user, which every
// sandbox shares, so one plugin's queues could take it all and deny
// other organizations' plugins theirs. Landlock refused the program the
// queue's descriptor, but only once the queue was made and counted, for
// as long as the sandbox ran: the second try found it there.
func TestCommand_MessageQueuesAreRefused(t *testing.T) {
	bin := testProgram(t, "probe")
	require.Equal(t, "mq mq_open: too many open files, then too many open files", probe(t, bin, "mq"))
}

// A program may have at most 1024 signals pending (RLIMIT_SIGPENDING),
// its POSIX timers among them: they count against one budget for
// outboxd's user, which every sandbox and outboxd itself share, so one
// plugin queueing signals to itself (about 96,000 here) took it all, and
// every other sandbox's init then spun without ever starting its
// program until that plugin ended.
func TestCommand_PendingSignalsAreBounded(t *testing.T) {
	bin := testProgram(t, "probe")
	out := probe(t, bin, "sigqueue")
	queued, err, ok := strings.Cut(strings.TrimPrefix(out, "sigqueue ok "), ", then ")
	require.True(t, ok, out)
	require.Equal(t, "resource temporarily unavailable", err)
	n, convErr := strconv.Atoi(queued)
	require.NoError(t, convErr, out)
	require.LessOrEqual(t, n, 1024, "signals queued")
	require.Greater(t, n, 1000, "signals queued") // the program's own, less any of the Go runtime's pending
}

// A program may have 16 inotify instances and 8192 watches: both count
// against limits for outboxd's user (128 instances by default), which
// every sandbox, outboxd and, for outboxd as root, the host's other
// services share, so one plugin could take them all while it ran.
func TestCommand_InotifyIsBounded(t *testing.T) {
	bin := testProgram(t, "probe")
	require.Equal(t, "inotify ok 16 instances, then too many open files; 8192 watches, then no space left on device", probe(t, bin, "inotify"))
}

// So may it have 16 fanotify groups and 8192 marks, which the kernel
// counts for outboxd's user as it does inotify's (128 groups by default).
func TestCommand_FanotifyIsBounded(t *testing.T) {
	bin := testProgram(t, "probe")
	require.Equal(t, "fanotify ok 16 groups, then too many open files; 8192 marks, then no space left on device", probe(t, bin, "fanotify"))
}
