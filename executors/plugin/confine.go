package plugin

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/outboxd/outboxd/executors/plugin/sandbox"
	"github.com/outboxd/outboxd/internal/platform/netguard"
)

// Values of permissions.filesystem.
const (
	fsNone      = "none"      // nothing may be written (the default)
	fsWorkspace = "workspace" // read-write in the call's working directory
)

// hostPort is one permissions.network entry.
type hostPort struct {
	Host string
	Port uint16
}

func (h hostPort) String() string { return net.JoinHostPort(h.Host, strconv.Itoa(int(h.Port))) }

// parseNetwork checks permissions.network: each entry "host:port" with a
// port 1-65535, and a host that is an address the private-network guard
// lets through (unless private networks are allowed) or a name other
// than localhost. Names are checked again, resolved, before each run.
func parseNetwork(entries []string, allowPrivate bool) ([]hostPort, error) {
	if len(entries) > sandbox.MaxDestinations {
		return nil, fmt.Errorf("permissions.network: %d entries, at most %d", len(entries), sandbox.MaxDestinations)
	}
	var out []hostPort
	for _, e := range entries {
		host, port, err := net.SplitHostPort(e)
		if err != nil || host == "" {
			return nil, fmt.Errorf("permissions.network: %q is not host:port", e)
		}
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("permissions.network: %q: the port must be a number from 1 to 65535", e)
		}
		if strings.ContainsAny(host, "/ *") {
			return nil, fmt.Errorf("permissions.network: %q: the host must be one name or address", e)
		}
		if !allowPrivate {
			addr, err := netip.ParseAddr(host)
			private := err == nil && !netguard.AddrAllowed(addr)
			if private || strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
				return nil, fmt.Errorf("permissions.network: %q is a private, loopback or internal address (connectors.allow_private_networks is off)", e)
			}
		}
		out = append(out, hostPort{Host: host, Port: uint16(n)})
	}
	return out, nil
}

// checkNetwork resolves the declared hosts and refuses the run when one
// resolves to an address the private-network guard refuses: the plugin
// is told before it runs, rather than finding its connections reset
// (egressDialer refuses them again as they are made).
func checkNetwork(ctx context.Context, resolver *net.Resolver, hosts []hostPort) error {
	for _, h := range hosts {
		addrs, err := resolver.LookupNetIP(ctx, "ip", h.Host)
		if err != nil {
			return fmt.Errorf("resolving %s: %w", h.Host, err)
		}
		for _, a := range addrs {
			if !netguard.AddrAllowed(a) {
				return fmt.Errorf("permissions.network %s: %w", h, &netguard.AddrError{Addr: a})
			}
		}
	}
	return nil
}

// egressDialer dials the declared destinations a sandboxed plugin
// connects to (the sandbox relays its connections through it): within
// 10 seconds, with the private-network guard unless private networks are
// allowed, so a name that resolves inside by the time of the connection
// is refused then. A refusal is logged; the plugin sees its connection
// reset.
func egressDialer(resolver *net.Resolver, allowPrivate bool, logger *slog.Logger) func(context.Context, string, string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 10 * time.Second, Resolver: resolver}
	if !allowPrivate {
		d.Control = netguard.Control
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, address)
		if err != nil {
			logger.WarnContext(ctx, "a plugin's connection to a declared destination failed", "destination", address, "error", err)
		}
		return c, err
	}
}

// executables returns path and what the kernel must also execute to run
// it: the interpreter of a #! script (and, for "#!/usr/bin/env name", the
// program name resolves to) and the dynamic loader of an ELF file. The #!
// line and the loader are the package's to write, and the sandbox binds
// what they name and lets the plugin read it: only a regular file with an
// execute permission bit, all the kernel would execute, is added (not a
// directory, a socket, or a secret file behind a directory the plugin's
// user may not enter).
func executables(path string) []string {
	out := []string{path}
	for i := 0; i < len(out) && i < 8; i++ {
		for _, p := range needs(out[i]) {
			if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
				out = append(out, p)
			}
		}
	}
	return out
}

// pathMax is the longest path the kernel takes (PATH_MAX).
const pathMax = 4096

// needs returns what path needs executed to run: its #! interpreter or
// its ELF loader.
func needs(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := f.Read(head)
	head = head[:n]
	if bytes.HasPrefix(head, []byte("#!")) {
		line, _, _ := bytes.Cut(head[2:], []byte("\n"))
		words := strings.Fields(string(line))
		if len(words) == 0 {
			return nil
		}
		out := []string{words[0]}
		if filepath.Base(words[0]) == "env" {
			for _, w := range words[1:] {
				if strings.HasPrefix(w, "-") || strings.Contains(w, "=") {
					continue
				}
				if p, err := lookChildPath(w); err == nil {
					out = append(out, p)
				}
				break
			}
		}
		return out
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil
	}
	defer ef.Close()
	for _, p := range ef.Progs {
		// The kernel runs no loader named by more than PATH_MAX bytes; a
		// larger size is neither read nor allocated.
		if p.Type == elf.PT_INTERP && p.Filesz <= pathMax {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err == nil {
				return []string{string(bytes.TrimRight(b, "\x00"))}
			}
		}
	}
	return nil
}

// errUnsandboxed is the reason plugins do not run when the sandbox is
// unavailable and plugins.allow_unsandboxed is off.
var errUnsandboxed = errors.New("set plugins.allow_unsandboxed: true to run plugins without it (every plugin then gets what outboxd's user may do)")

// readableByNobody checks that the sandbox, which runs plugins as nobody
// when outboxd runs as root, can read the package and run its
// executables: others need r-x on its directory and r (r-x for a program
// that is not a .js file) on each executable.
func readableByNobody(a *action) error {
	need := map[string]os.FileMode{a.dir: 0o005}
	for _, argv := range [][]string{a.execute, a.verify, a.rollback} {
		switch {
		case len(argv) == 2: // node and the script
			need[argv[1]] = 0o004
		case len(argv) == 1:
			need[argv[0]] = 0o005
		}
	}
	for path, mode := range need {
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		if info.Mode().Perm()&mode != mode {
			return fmt.Errorf("%s has mode %#o: the sandbox runs plugins as nobody when outboxd runs as root, so others need %s (chmod o+%s)",
				path, info.Mode().Perm(), map[os.FileMode]string{0o004: "read permission", 0o005: "read and execute permission"}[mode],
				map[os.FileMode]string{0o004: "r", 0o005: "rx"}[mode])
		}
	}
	return nil
}
