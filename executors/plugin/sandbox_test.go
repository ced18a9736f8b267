package plugin_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/outboxd/outboxd/executors/plugin"
)

// escapeJS is a plugin that tries, from inside, every way out of the
// sandbox its input names, and reports for each what happened: "ok" (and
// what it read) or the error code. The test asserts which must fail.
const escapeJS = `const fs = require('fs'), net = require('net'), cp = require('child_process');
let s = '';
process.stdin.on('data', d => s += d);
process.stdin.on('end', async () => {
  const {input} = JSON.parse(s);
  const r = {};
  const read = p => { try { return 'ok:' + fs.readFileSync(p, 'utf8').slice(0, 200); } catch (e) { return e.code || String(e); } };
  const write = p => { try { fs.writeFileSync(p, 'escaped'); return 'ok'; } catch (e) { return e.code || String(e); } };
  const run = p => { try { cp.execFileSync(p, [], {stdio: 'ignore'}); return 'ok'; } catch (e) { return e.code || String(e.status); } };
  const connect = opts => new Promise(done => {
    const c = net.connect(opts);
    const t = setTimeout(() => { c.destroy(); done('timeout'); }, 3000);
    c.on('connect', () => { clearTimeout(t); c.end(); done('ok'); });
    c.on('error', e => { clearTimeout(t); done(e.code || String(e)); });
  });
  r.config = read(input.config);
  r.parentEnviron = read('/proc/' + input.parent + '/environ');
  r.parentCmdline = read('/proc/' + input.parent + '/cmdline');
  r.selfEnviron = read('/proc/self/environ');
  r.passwd = read('/etc/passwd');
  r.ownManifest = read(__dirname + '/action.json');
  r.writeOutside = write(input.outside + '/escaped.txt');
  r.writeTmp = write('/tmp/escaped.txt');
  r.writeOwnDir = write(__dirname + '/escaped.txt');
  try { fs.chmodSync(__dirname + '/action.json', 0o666); r.chmodOwnDir = 'ok'; } catch (e) { r.chmodOwnDir = e.code; }
  r.writeWorkspace = write('note.txt');
  r.readWorkspace = read('note.txt');
  r.runCat = run('/bin/cat');
  r.runAllowed = run(input.allowed);
  r.postgres = await connect({host: '127.0.0.1', port: input.postgres});
  r.declared = await connect({host: '127.0.0.1', port: input.declared});
  r.otherHost = await connect({host: '127.0.0.2', port: input.declared});
  r.udp = await new Promise(done => {
    const u = require('dgram').createSocket('udp4');
    u.on('error', e => { u.close(); done(e.code || String(e)); });
    u.send('leak', input.udp, '127.0.0.1', e => { u.close(); done(e ? e.code || String(e) : 'sent'); });
  });
  r.unixSocket = await connect({path: input.socket});
  r.env = Object.keys(process.env).sort().join(' ');
  process.stdout.write(JSON.stringify(r));
});`

// listener is a loopback TCP listener that counts the connections it
// accepted.
type listener struct {
	net.Listener
	accepted atomic.Int32
}

func listen(t *testing.T, network, addr string) *listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	require.NoError(t, err)
	l := &listener{Listener: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			c.Close()
		}
	}()
	return l
}

func port(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }

func requireNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("SKIPPED LOUDLY: node is not installed; the sandbox escape tests run their plugin with node")
	}
}

// Every way out the issue lists fails from inside a plugin, while what it
// declared works: its workspace, its own directory, its allowlisted
// command, its declared network port.
func TestSandbox_EscapesFailDeclaredPermissionsWork(t *testing.T) {
	requireNode(t)
	t.Setenv("OUTBOXD_JWT_SECRET", "parent-jwt-secret")

	// Where outboxd's config file would be: readable by anyone, so only
	// the sandbox keeps the plugin out.
	etc := t.TempDir()
	require.NoError(t, os.Chmod(etc, 0o755))
	config := filepath.Join(etc, "outboxd.yaml")
	require.NoError(t, os.WriteFile(config, []byte("jwt_secret: s3cret-from-config\n"), 0o644))
	// A directory anyone may write to, outside the workspace.
	outside := t.TempDir()
	require.NoError(t, os.Chmod(outside, 0o777))

	postgres := listen(t, "tcp", "127.0.0.1:0") // stands in for Postgres: never declared
	declared := listen(t, "tcp", "127.0.0.1:0")
	// Another host on the declared port: the declaration names a host.
	otherHost := listen(t, "tcp", "127.0.0.2:"+strconv.Itoa(port(declared)))
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer udp.Close()
	socket := filepath.Join(etc, "pg.sock")
	unixLn := listen(t, "unix", socket)
	require.NoError(t, os.Chmod(socket, 0o777))

	s := mustLoad(t, plugin.Config{CommandAllowlist: []string{"true"}, AllowPrivateNetworks: true}, map[string]pkg{"escape": {
		manifest: map[string]any{"riskTier": "R1", "permissions": map[string]any{
			"filesystem": "workspace",
			"commands":   []string{"true"},
			"network":    []string{"127.0.0.1:" + strconv.Itoa(port(declared))},
		}},
		files: map[string]string{"execute.js": escapeJS},
	}})
	allowed, err := exec.LookPath("true")
	require.NoError(t, err)
	params, err := json.Marshal(map[string]any{
		"config": config, "parent": os.Getpid(), "outside": outside, "allowed": allowed,
		"postgres": port(postgres), "declared": port(declared), "socket": socket, "udp": udp.LocalAddr().(*net.UDPAddr).Port,
	})
	require.NoError(t, err)
	res, e := execute(t, s, "escape", string(params))
	require.Nil(t, e)
	var r map[string]string
	require.NoError(t, json.Unmarshal(res.Data, &r), string(res.Data))
	t.Logf("from inside: %s", res.Data)

	for _, k := range []string{"config", "parentEnviron", "parentCmdline", "selfEnviron", "passwd", "writeOutside", "writeTmp", "writeOwnDir", "chmodOwnDir", "runCat", "postgres", "otherHost", "unixSocket"} {
		require.NotContains(t, r[k], "ok", "%s must fail from inside the sandbox", k)
		require.NotEmpty(t, r[k], k)
	}
	require.Equal(t, "EACCES", r["runCat"], "a command that is not declared cannot be executed")
	require.NoFileExists(t, filepath.Join(outside, "escaped.txt"))
	require.Zero(t, postgres.accepted.Load(), "no connection reached the undeclared port")
	require.Zero(t, unixLn.accepted.Load(), "no connection reached the UNIX socket")
	require.Zero(t, otherHost.accepted.Load(), "no connection reached another host on the declared port")
	require.NoError(t, udp.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
	_, _, err = udp.ReadFrom(make([]byte, 16))
	require.Error(t, err, "no datagram left the sandbox (%s)", r["udp"])

	require.Equal(t, "ok", r["writeWorkspace"])
	require.Equal(t, "ok:escaped", r["readWorkspace"])
	require.True(t, strings.HasPrefix(r["ownManifest"], `ok:{`), r["ownManifest"])
	require.Equal(t, "ok", r["runAllowed"], "a declared, allowlisted command runs")
	require.Equal(t, "ok", r["declared"], "the declared port is reachable")
	require.Equal(t, int32(1), declared.accepted.Load())
	require.Equal(t, "HOME LANG OUTBOXD_IDEMPOTENCY_KEY PATH", r["env"])
	require.NotContains(t, string(res.Data), "parent-jwt-secret")
	require.NotContains(t, string(res.Data), "s3cret-from-config")
}

// The #! line of a package's executable (and the loader of an ELF one) is
// the package's to write; the sandbox lets the plugin read and execute
// what it names. Only an executable file is that: a secret file behind a
// directory nobody may enter, a directory (/etc) or a UNIX socket
// (Postgres's) named there stays out of the sandbox, even when the file
// naming it never runs.
func TestSandbox_InterpreterLineGrantsOnlyExecutables(t *testing.T) {
	requireNode(t)
	hidden := t.TempDir()
	require.NoError(t, os.Chmod(hidden, 0o700))
	secret := filepath.Join(hidden, "dev.json")
	require.NoError(t, os.WriteFile(secret, []byte("s3cret-from-config\n"), 0o644))
	socket := filepath.Join(t.TempDir(), ".s.PGSQL.5432")
	pg := listen(t, "unix", socket)
	require.NoError(t, os.Chmod(socket, 0o777))

	for _, named := range []string{secret, "/etc", socket} {
		t.Run(filepath.Base(named), func(t *testing.T) {
			s := mustLoad(t, plugin.Config{}, map[string]pkg{"peek": {
				manifest: map[string]any{"riskTier": "R1"},
				files: map[string]string{
					"execute.js": `const fs = require('fs'), net = require('net');
const read = p => { try { return 'ok:' + fs.readFileSync(p, 'utf8'); } catch (e) { return e.code || String(e); } };
const r = {secret: read(` + strconv.Quote(secret) + `), passwd: read('/etc/passwd')};
const c = net.connect({path: ` + strconv.Quote(socket) + `});
c.on('connect', () => { r.socket = 'ok'; c.end(); process.stdout.write(JSON.stringify(r)); });
c.on('error', e => { r.socket = e.code || String(e); process.stdout.write(JSON.stringify(r)); });`,
					// Never runs: rollback runs only after a failed verification.
					"rollback": "#!" + named + "\n",
				},
			}})
			res, e := execute(t, s, "peek", `{}`)
			require.Nil(t, e, named)
			var r map[string]string
			require.NoError(t, json.Unmarshal(res.Data, &r), string(res.Data))
			for k, v := range r {
				require.False(t, strings.HasPrefix(v, "ok"), "#!%s let the plugin reach %s: %s", named, k, res.Data)
			}
		})
	}
	require.Zero(t, pg.accepted.Load(), "no connection reached the UNIX socket")
}

// Without permissions.network a plugin has no network at all: not even
// loopback, whatever the port.
func TestSandbox_NoNetworkUnlessDeclared(t *testing.T) {
	requireNode(t)
	ln := listen(t, "tcp", "127.0.0.1:0")
	s := mustLoad(t, plugin.Config{}, map[string]pkg{"offline": {
		manifest: map[string]any{"riskTier": "R1"},
		files: map[string]string{"execute.js": `const net = require('net');
const c = net.connect({host: '127.0.0.1', port: ` + strconv.Itoa(port(ln)) + `});
c.on('connect', () => { process.stdout.write('"connected"'); c.end(); });
c.on('error', e => process.stdout.write(JSON.stringify(e.code)));`},
	}})
	res, e := execute(t, s, "offline", `{}`)
	require.Nil(t, e)
	require.NotEqual(t, `"connected"`, string(res.Data))
	require.Zero(t, ln.accepted.Load())
}

// permissions.filesystem none (the default): nothing may be written, not
// even in the working directory; the verification still reads it.
func TestSandbox_FilesystemNoneWritesNothing(t *testing.T) {
	s := mustLoad(t, plugin.Config{}, map[string]pkg{"reader": {
		manifest: map[string]any{"riskTier": "R1"},
		files:    map[string]string{"execute": sh(`if (: > note.txt) 2>/dev/null; then echo '"wrote"'; else echo '"refused"'; fi`)},
	}})
	res, e := execute(t, s, "reader", `{}`)
	require.Nil(t, e)
	require.JSONEq(t, `"refused"`, string(res.Data))
}

// A shell plugin may run only what it declared: /bin/cat is refused by
// the kernel although it exists and the plugin's shell runs.
func TestSandbox_UndeclaredCommandCannotRun(t *testing.T) {
	s := mustLoad(t, plugin.Config{CommandAllowlist: []string{"test"}}, map[string]pkg{"shell": {
		manifest: map[string]any{"riskTier": "R1", "permissions": map[string]any{"commands": []string{"test"}}},
		files: map[string]string{"execute": sh(`if /bin/cat /dev/null 2>/dev/null; then c=ran; else c=refused; fi
if test -d /; then t=ran; else t=refused; fi
echo "{\"cat\": \"$c\", \"test\": \"$t\"}"`)},
	}})
	res, e := execute(t, s, "shell", `{}`)
	require.Nil(t, e)
	require.JSONEq(t, `{"cat": "refused", "test": "ran"}`, string(res.Data))
}

// A child started with setsid does not outlive the call: the plugin is
// PID 1 of its PID namespace, and everything in it dies with it. The
// plugin waits until the child runs, so the test would see it if it
// survived (as it does without the sandbox).
func TestSandbox_SetsidChildDiesWithTheCall(t *testing.T) {
	marker := fmt.Sprintf("%d.%d", 30000+os.Getpid()%1000, time.Now().UnixNano()%1000000)
	pkgs := map[string]pkg{"detach": {
		manifest: map[string]any{"riskTier": "R1", "permissions": map[string]any{
			"filesystem": "workspace", "commands": []string{"setsid", "sleep"},
		}},
		// The marker is in the child's command line from its start (an
		// argument of sh -c) to its end (sleep's).
		files: map[string]string{"execute": sh(`setsid sh -c ': > started; exec sleep "$0"' ` + marker + ` </dev/null >/dev/null 2>&1 &
while [ ! -e started ]; do :; done
echo '{"detached": true}'`)},
	}}
	cfg := plugin.Config{CommandAllowlist: []string{"setsid", "sleep"}, Timeout: 30 * time.Second}
	res, e := execute(t, mustLoad(t, cfg, pkgs), "detach", `{}`)
	require.Nil(t, e)
	require.JSONEq(t, `{"detached": true}`, string(res.Data))
	requireNoProcess(t, marker)

	// The same plugin without the sandbox leaves its child behind: what
	// the sandbox prevents.
	res, e = execute(t, mustLoad(t, unsandboxed(cfg), pkgs), "detach", `{}`)
	require.Nil(t, e)
	require.JSONEq(t, `{"detached": true}`, string(res.Data))
	pids := processes(marker)
	require.NotEmpty(t, pids, "without the sandbox the setsid child survives")
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// processes returns the pids with an argument arg.
func processes(arg string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(b, []byte("\x00"+arg+"\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// requireNoProcess waits, bounded, until no process has the argument arg
// (or only zombies do).
func requireNoProcess(t *testing.T, arg string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, pid := range processes(arg) {
			if !goneOrZombie(pid) {
				return false
			}
		}
		return true
	}, 5*time.Second, 20*time.Millisecond, "a process the plugin started is still running")
}

// goneOrZombie says whether pid is no longer running: no such process, or
// a zombie waiting for its reaper.
func goneOrZombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

// Where the kernel cannot enforce the sandbox, plugins are disabled with
// the reason and nothing runs; plugins.allow_unsandboxed runs them, with
// a warning at start and on every run.
func TestSandbox_UnavailableRefusesUnlessAllowed(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	pkgs := map[string]pkg{"touch": {
		manifest: map[string]any{"riskTier": "R1"},
		files:    map[string]string{"execute": sh(": > " + marker + "; echo '{}'")},
	}}
	noKernel := func() error { return errors.New("the kernel offers Landlock ABI 3; the sandbox needs 6") }
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))

	s := mustLoad(t, plugin.Config{Sandbox: noKernel, Logger: logger}, pkgs)
	require.Contains(t, s.Disabled(), "Landlock ABI 3")
	require.Contains(t, s.Disabled(), "plugins.allow_unsandboxed")
	require.Contains(t, logs.String(), "level=ERROR")
	require.Contains(t, logs.String(), "Landlock ABI 3")
	_, e := execute(t, s, "touch", `{}`)
	require.NotNil(t, e)
	require.Equal(t, "source_disabled", e.Code)
	require.Contains(t, e.Message, "Landlock ABI 3")
	require.NoFileExists(t, marker)

	logs.Reset()
	s = mustLoad(t, plugin.Config{Sandbox: noKernel, Logger: logger, AllowUnsandboxed: true}, pkgs)
	require.Empty(t, s.Disabled())
	require.Contains(t, logs.String(), "level=WARN")
	require.Contains(t, logs.String(), "WITHOUT A SANDBOX")
	logs.Reset()
	_, e = execute(t, s, "touch", `{}`)
	require.Nil(t, e)
	require.FileExists(t, marker, "unsandboxed, it writes where outboxd's user may")
	require.Contains(t, logs.String(), "level=WARN", "every unsandboxed run is logged")
	require.Contains(t, logs.String(), "action_id=touch")

	// With the sandbox available the escape hatch changes nothing.
	require.NoError(t, os.Remove(marker))
	s = mustLoad(t, plugin.Config{AllowUnsandboxed: true}, pkgs)
	_, e = execute(t, s, "touch", `{}`)
	require.NotNil(t, e, "the sandboxed plugin may not write outside its workspace")
	require.NoFileExists(t, marker)

	// Off, nothing is probed: plugins are disabled for that reason only.
	s, err := load(t, plugin.Config{Sandbox: func() error { panic("probed") }}, pkgs)
	require.NoError(t, err)
	require.Equal(t, plugin.DisabledReason, s.Disabled())
}

// The real probe agrees with this kernel: the escape tests above ran in
// the sandbox, so it must say the sandbox is available here.
func TestSandbox_ProbeFindsTheKernelsSandbox(t *testing.T) {
	s := mustLoad(t, plugin.Config{}, map[string]pkg{"ping": {files: map[string]string{"execute": sh(okExecute)}}})
	require.Empty(t, s.Disabled())
	res, e := execute(t, s, "ping", `{}`)
	require.Nil(t, e)
	require.JSONEq(t, `{"done": true}`, string(res.Data))
}

// permissions are checked at load: network entries are host:port and,
// unless private networks are allowed, no private or loopback host;
// filesystem is none or workspace.
func TestLoad_ChecksPermissions(t *testing.T) {
	t.Parallel()
	with := func(perms map[string]any) map[string]pkg {
		return map[string]pkg{"net": {manifest: map[string]any{"riskTier": "R1", "permissions": perms}, files: map[string]string{"execute": sh(okExecute)}}}
	}
	for entry, want := range map[string]string{
		"api.example.com":       "is not host:port",
		"api.example.com:0":     "port must be a number from 1 to 65535",
		"api.example.com:99999": "port must be a number from 1 to 65535",
		"127.0.0.1:5432":        "private, loopback or internal",
		"10.0.0.7:443":          "private, loopback or internal",
		"localhost:443":         "private, loopback or internal",
		"[::1]:443":             "private, loopback or internal",
		"169.254.169.254:80":    "private, loopback or internal",
	} {
		_, err := load(t, plugin.Config{}, with(map[string]any{"network": []string{entry}}))
		require.ErrorContains(t, err, "permissions.network", entry)
		require.ErrorContains(t, err, want, entry)
	}
	_, err := load(t, plugin.Config{}, with(map[string]any{"network": []string{"api.example.com:443", "93.184.215.14:443"}}))
	require.NoError(t, err)
	_, err = load(t, plugin.Config{AllowPrivateNetworks: true}, with(map[string]any{"network": []string{"127.0.0.1:5432"}}))
	require.NoError(t, err)

	_, err = load(t, plugin.Config{}, with(map[string]any{"filesystem": "everything"}))
	require.ErrorContains(t, err, `permissions.filesystem "everything"`)
}

// The loader an ELF executable names (PT_INTERP) is read to let it into
// the sandbox: a size past any the kernel runs (PATH_MAX) is not read,
// where outboxd's start panicked allocating it (makeslice) or took that
// much memory.
func TestLoad_ELFLoaderSizeIsBounded(t *testing.T) {
	t.Parallel()
	elf := make([]byte, 64+56)
	copy(elf, "\x7fELF\x02\x01\x01") // 64-bit, little-endian, version 1
	le := binary.LittleEndian
	le.PutUint16(elf[16:], 2)  // ET_EXEC
	le.PutUint16(elf[18:], 62) // EM_X86_64
	le.PutUint32(elf[20:], 1)  // EV_CURRENT
	le.PutUint64(elf[32:], 64) // the program headers' offset
	le.PutUint16(elf[52:], 64) // the header's size
	le.PutUint16(elf[54:], 56) // a program header's size
	le.PutUint16(elf[56:], 1)  // one program header
	ph := elf[64:]
	le.PutUint32(ph[0:], 3)      // PT_INTERP
	le.PutUint64(ph[8:], 120)    // its offset
	le.PutUint64(ph[32:], 1<<62) // its size in the file
	_, err := load(t, plugin.Config{}, map[string]pkg{"elf": {
		manifest: map[string]any{"riskTier": "R1"},
		files:    map[string]string{"execute": string(elf)},
	}})
	require.NoError(t, err)
}

// When outboxd runs as root the sandbox runs plugins as nobody: a package
// nobody cannot read is refused at load with the fix, not at the first
// run. As another user nothing changes.
func TestLoad_PackageMustBeReadableByNobodyAsRoot(t *testing.T) {
	t.Parallel()
	cfg := plugin.Config{AllowCodeExecution: true}
	cfg.Dir = writePackages(t, map[string]pkg{"private": {files: map[string]string{"execute": sh(okExecute)}}})
	require.NoError(t, os.Chmod(filepath.Join(cfg.Dir, "private", "execute"), 0o750))
	_, err := plugin.Load(&cfg, core)
	if os.Geteuid() != 0 {
		require.NoError(t, err)
		return
	}
	require.ErrorContains(t, err, "execute has mode 0750")
	require.ErrorContains(t, err, "chmod o+rx")

	// Off, nothing runs, so nothing is checked.
	cfg.AllowCodeExecution = false
	_, err = plugin.Load(&cfg, core)
	require.NoError(t, err)
}

// The plugin inherits no descriptor of outboxd's but stdin, stdout and
// stderr (here the test holds a listener and a file open meanwhile).
func TestSandbox_NoInheritedDescriptors(t *testing.T) {
	listen(t, "tcp", "127.0.0.1:0")
	f, err := os.Open(os.Args[0])
	require.NoError(t, err)
	defer f.Close()
	s := mustLoad(t, plugin.Config{}, map[string]pkg{"fds": {
		manifest: map[string]any{"riskTier": "R1"},
		files: map[string]string{"execute": sh(`open=""
for fd in 0 1 2 3 4 5 6 7 8 9; do if { true >&$fd; } 2>/dev/null || { true <&$fd; } 2>/dev/null; then open="$open$fd"; fi; done
echo "\"$open\""`)},
	}})
	res, e := execute(t, s, "fds", `{}`)
	require.Nil(t, e)
	require.JSONEq(t, `"012"`, string(res.Data))
}

// A declared host is resolved before every run: one that now points at a
// private address is refused (for good) before the plugin runs, one that
// does not resolve is retried later, unless private networks are allowed.
func TestExecute_DeclaredHostResolvingPrivateIsRefused(t *testing.T) {
	t.Parallel()
	var answer atomic.Pointer[netip.Addr]
	set := func(a string) { addr := netip.MustParseAddr(a); answer.Store(&addr) }
	set("10.1.2.3")
	dns := fakeDNS(t, func(name string) (netip.Addr, bool) { return *answer.Load(), name == "tracker.example.com." })
	pkgs := map[string]pkg{"net": {
		manifest: map[string]any{"riskTier": "R1", "permissions": map[string]any{"network": []string{"tracker.example.com:443"}}},
		files:    map[string]string{"execute": sh(okExecute)},
	}}
	s := mustLoad(t, plugin.Config{Resolver: dns}, pkgs)
	_, e := execute(t, s, "net", `{}`)
	require.NotNil(t, e)
	require.Equal(t, "plugin_network_refused", e.Code)
	require.Contains(t, e.Message, "tracker.example.com:443")
	require.Contains(t, e.Message, "10.1.2.3")
	require.False(t, e.Retryable)

	set("93.184.215.14") // public: runs
	res, e := execute(t, s, "net", `{}`)
	require.Nil(t, e)
	require.JSONEq(t, `{"done": true}`, string(res.Data))

	s = mustLoad(t, plugin.Config{Resolver: fakeDNS(t, func(string) (netip.Addr, bool) { return netip.Addr{}, false })}, pkgs)
	_, e = execute(t, s, "net", `{}`)
	require.NotNil(t, e)
	require.Equal(t, "plugin_network_refused", e.Code)
	require.True(t, e.Retryable, "a name that does not resolve now may later")

	set("10.1.2.3")
	s = mustLoad(t, plugin.Config{Resolver: dns, AllowPrivateNetworks: true}, pkgs)
	_, e = execute(t, s, "net", `{}`)
	require.Nil(t, e, "private networks allowed: not checked")
}

// fakeDNS is a resolver asking a loopback DNS server that answers an A
// record with lookup's address for the names it knows, NXDOMAIN else.
func fakeDNS(t *testing.T, lookup func(name string) (netip.Addr, bool)) *net.Resolver {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			hdr, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: hdr.ID, Response: true, Authoritative: true})
			addr, ok := lookup(q.Name.String())
			if !ok {
				b = dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: hdr.ID, Response: true, RCode: dnsmessage.RCodeNameError})
			}
			_ = b.StartQuestions()
			_ = b.Question(q)
			_ = b.StartAnswers()
			if ok && q.Type == dnsmessage.TypeA {
				_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}, dnsmessage.AResource{A: addr.As4()})
			}
			msg, err := b.Finish()
			if err == nil {
				_, _ = conn.WriteTo(msg, from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", conn.LocalAddr().String())
	}}
}

// Each plugin process gets at most plugins.max_memory_bytes of data
// memory: an allocation within it works, one past it fails in the plugin.
func TestSandbox_MemoryIsCapped(t *testing.T) {
	requireNode(t)
	s := mustLoad(t, plugin.Config{MaxMemoryBytes: 256 << 20}, map[string]pkg{"alloc": {
		manifest: map[string]any{"riskTier": "R1"},
		files: map[string]string{"execute.js": `let s = '';
process.stdin.on('data', d => s += d);
process.stdin.on('end', () => {
  const {input} = JSON.parse(s);
  const b = Buffer.alloc(input.mib << 20, 1);
  process.stdout.write(JSON.stringify({allocated: b.length >> 20}));
});`},
	}})
	res, e := execute(t, s, "alloc", `{"mib": 64}`)
	require.Nil(t, e)
	require.JSONEq(t, `{"allocated": 64}`, string(res.Data))

	_, e = execute(t, s, "alloc", `{"mib": 512}`)
	require.NotNil(t, e, "512 MiB is past the cap")
	require.Contains(t, e.Message, "exited with status")
}

// What one call's processes leave in its working directory is capped in
// bytes, execute's and verify's together: a call within the cap works,
// one past it fails with plugin_workspace_full and is not retried.
func TestSandbox_WorkspaceBytesAreCapped(t *testing.T) {
	requireNode(t)
	const writeMiB = `const fs = require('fs');
let s = '';
process.stdin.on('data', d => s += d);
process.stdin.on('end', () => {
  const {input} = JSON.parse(s);
  for (let i = 0; i < input.mib; i++) fs.writeFileSync(process.argv[1].replace(/.*\//, '') + i, Buffer.alloc(1 << 20, 1));
  process.stdout.write(JSON.stringify({wrote: input.mib}));
});`
	s := mustLoad(t, plugin.Config{MaxWorkspaceBytes: 8 << 20}, map[string]pkg{
		"fill": {
			manifest: map[string]any{"riskTier": "R1", "permissions": map[string]any{"filesystem": "workspace"}},
			files:    map[string]string{"execute.js": writeMiB},
		},
		"fill_twice": {
			manifest: map[string]any{"riskTier": "R1", "permissions": map[string]any{"filesystem": "workspace"}},
			files:    map[string]string{"execute.js": writeMiB, "verify.js": writeMiB},
		},
	})
	res, e := execute(t, s, "fill", `{"mib": 4}`)
	require.Nil(t, e)
	require.JSONEq(t, `{"wrote": 4}`, string(res.Data))

	_, e = execute(t, s, "fill", `{"mib": 64}`)
	require.NotNil(t, e, "64 MiB is past the cap")
	require.Equal(t, "plugin_workspace_full", e.Code)
	require.Contains(t, e.Message, "plugins.max_workspace_bytes")
	require.False(t, e.Retryable)

	// 6 MiB each is within the cap alone, not together.
	_, e = execute(t, s, "fill_twice", `{"mib": 6}`)
	require.NotNil(t, e)
	require.Equal(t, "verification_failed", e.Code)
	require.Contains(t, e.Message, "verify")
	require.Contains(t, e.Steps.Verification.Checks[0].Detail, "plugins.max_workspace_bytes")
}

// A file deleted while the plugin holds it open leaves the measure of its
// workspace, so no file may be larger than the workspace's cap: it was
// 256 MiB whatever the cap, and a plugin capped at 8 MiB kept 64 MiB
// (256 MiB each file, times its open files) on disk until it ended.
func TestSandbox_NoFileLargerThanTheWorkspace(t *testing.T) {
	requireNode(t)
	s := mustLoad(t, plugin.Config{MaxWorkspaceBytes: 8 << 20}, map[string]pkg{"hide": {
		manifest: map[string]any{"riskTier": "R1", "permissions": map[string]any{"filesystem": "workspace"}},
		files: map[string]string{"execute.js": `const fs = require('fs');
let s = '';
process.stdin.on('data', d => s += d);
process.stdin.on('end', () => {
  const {input} = JSON.parse(s);
  const fd = fs.openSync('hidden', 'w');
  fs.unlinkSync('hidden');
  let wrote = 0;
  try {
    for (; wrote < input.mib; wrote++) fs.writeSync(fd, Buffer.alloc(1 << 20, 1));
  } catch (e) {
    process.stdout.write(JSON.stringify({wrote, error: e.code}));
    return;
  }
  process.stdout.write(JSON.stringify({wrote}));
});`},
	}})
	res, e := execute(t, s, "hide", `{"mib": 4}`)
	require.Nil(t, e)
	require.JSONEq(t, `{"wrote": 4}`, string(res.Data))

	res, e = execute(t, s, "hide", `{"mib": 64}`)
	require.Nil(t, e)
	require.JSONEq(t, `{"wrote": 8, "error": "EFBIG"}`, string(res.Data))
}

// Empty files take no blocks, so entries are capped too.
func TestSandbox_WorkspaceEntriesAreCapped(t *testing.T) {
	s := mustLoad(t, plugin.Config{MaxWorkspaceFiles: 100}, map[string]pkg{"touch": {
		manifest: map[string]any{"riskTier": "R1", "permissions": map[string]any{"filesystem": "workspace"}},
		files: map[string]string{"execute": sh(`read -r line
case "$line" in *1000*) n=1000;; *) n=50;; esac
i=0; while [ $i -lt $n ]; do : > f$i; i=$((i+1)); done
echo "{\"files\": $n}"`)},
	}})
	res, e := execute(t, s, "touch", `{"n": 50}`)
	require.Nil(t, e)
	require.JSONEq(t, `{"files": 50}`, string(res.Data))

	_, e = execute(t, s, "touch", `{"n": 1000}`)
	require.NotNil(t, e)
	require.Equal(t, "plugin_workspace_full", e.Code)
	require.Contains(t, e.Message, "plugins.max_workspace_files")
}

// A call's working directory is removed after it even when the plugin
// took away its own permissions on what it left there (which stopped the
// removal for a user other than root, and left it on disk for good).
func TestSandbox_WorkspaceIsRemovedWhateverItsPermissions(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s := mustLoad(t, plugin.Config{CommandAllowlist: []string{"mkdir", "chmod"}}, map[string]pkg{"lock": {
		manifest: map[string]any{"riskTier": "R1", "permissions": map[string]any{
			"filesystem": "workspace", "commands": []string{"mkdir", "chmod"},
		}},
		files: map[string]string{"execute": sh(`cat >/dev/null
mkdir -p locked/deep && : > locked/deep/file && chmod 000 locked/deep && chmod 500 locked && echo '"locked"'`)},
	}})
	res, e := execute(t, s, "lock", `{}`)
	require.Nil(t, e)
	require.JSONEq(t, `"locked"`, string(res.Data))
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left, "the call's directories are removed")
}

// The same with the locked directory nested past the longest path the
// system opens (PATH_MAX, 4096 bytes): giving permissions back by whole
// paths could not reach it, and the workspace stayed on disk, as much
// as the plugin had written, after every call. (Only a user other than
// root is stopped by the permissions: run as root, this passes either
// way.) The tree is made with short names and renamed, so that it is
// locked before a measure can stop the plugin, which cannot measure it
// either.
func TestSandbox_WorkspaceIsRemovedHoweverDeep(t *testing.T) {
	requireNode(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s := mustLoad(t, plugin.Config{}, map[string]pkg{"deep": {
		manifest: map[string]any{"riskTier": "R1", "permissions": map[string]any{"filesystem": "workspace"}},
		files: map[string]string{"execute.js": `const fs = require('fs');
const long = 'd'.repeat(200), depth = 30;
fs.mkdirSync('a/'.repeat(depth), {recursive: true});
fs.writeFileSync('a/'.repeat(depth) + 'file', 'x');
fs.chmodSync('a/'.repeat(depth), 0);
for (let i = 0; i < depth; i++) { fs.renameSync('a', long); process.chdir(long); }
process.stdout.write('"locked"');`},
	}})
	_, _ = execute(t, s, "deep", `{}`) // its workspace cannot be measured either
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left, "the call's directories are removed")
}
