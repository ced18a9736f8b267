package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The way out of a sandbox with Spec.Network: its network namespace has
// only loopback, on which the init listens at one address and port per
// destination and hands the listeners to outboxd (over egressFD, with
// SCM_RIGHTS) before it execs the program. outboxd accepts there and
// dials the destination itself, so the program reaches the declared
// hosts and nothing else, whatever address it tries, and outboxd checks
// each address it dials (Cmd.Dial).

// egressFD is the descriptor on which the init hands outboxd the
// listeners; the init has it only when Spec.Network is not empty.
const egressFD = 4

// distinct returns dests without repeats: names compared as the
// sandbox's /etc/hosts does (case and a final dot aside), addresses as
// addresses, so that each gets one listener.
func distinct(dests []Destination) []Destination {
	out := make([]Destination, 0, len(dests))
	seen := map[string]bool{}
	for _, d := range dests {
		key := strings.ToLower(strings.TrimSuffix(d.Host, "."))
		if a, err := netip.ParseAddr(d.Host); err == nil {
			key = a.Unmap().String()
		}
		key = net.JoinHostPort(key, strconv.Itoa(int(d.Port)))
		if !seen[key] {
			seen[key] = true
			out = append(out, d)
		}
	}
	return out
}

// localAddrs returns the address at which each destination listens in
// the sandbox, and the /etc/hosts that names them: an address is its
// own, localhost is 127.0.0.1, and each other name gets a loopback
// address of its own, 127.1.0.1 onwards (past any a destination names).
func localAddrs(dests []Destination) ([]netip.Addr, []byte) {
	hosts := []string{"127.0.0.1\tlocalhost"}
	names := map[string]netip.Addr{"localhost": netip.AddrFrom4([4]byte{127, 0, 0, 1})}
	taken := map[netip.Addr]bool{}
	for _, d := range dests {
		if a, err := netip.ParseAddr(d.Host); err == nil {
			taken[a.Unmap()] = true
		}
	}
	next := netip.AddrFrom4([4]byte{127, 1, 0, 0})
	out := make([]netip.Addr, len(dests))
	for i, d := range dests {
		if a, err := netip.ParseAddr(d.Host); err == nil {
			out[i] = a.Unmap()
			continue
		}
		name := strings.ToLower(strings.TrimSuffix(d.Host, "."))
		a, ok := names[name]
		if !ok {
			for next = next.Next(); taken[next]; next = next.Next() {
			}
			a = next
			names[name] = a
			// Also as a fully qualified name, which the C library's
			// lookup in the hosts file does not strip.
			hosts = append(hosts, a.String()+"\t"+name+" "+name+".")
		}
		out[i] = a
	}
	return out, []byte(strings.Join(hosts, "\n") + "\n")
}

// openEgress, in the init, brings loopback up, gives it the addresses of
// dests that are not loopback's already, listens at each, and hands the
// listeners to outboxd. It returns the sandbox's /etc/hosts, nil without
// destinations.
func openEgress(dests []Destination) ([]byte, error) {
	if len(dests) == 0 {
		return nil, nil
	}
	addrs, hosts := localAddrs(dests)
	if err := loopbackUp(addrs); err != nil {
		return nil, err
	}
	fds := make([]int, 0, len(dests))
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for i, a := range addrs {
		fd, err := listenAt(a, dests[i].Port)
		if err != nil {
			return nil, fmt.Errorf("listening for %s at %s: %w", net.JoinHostPort(dests[i].Host, strconv.Itoa(int(dests[i].Port))), a, err)
		}
		fds = append(fds, fd)
	}
	if err := unix.Sendmsg(egressFD, []byte{byte(len(fds))}, unix.UnixRights(fds...), nil, 0); err != nil {
		return nil, fmt.Errorf("handing the listeners to outboxd: %w", err)
	}
	unix.Close(egressFD)
	return hosts, nil
}

// loopbackUp brings lo up and adds to it each address of addrs that is
// not loopback, as a host route (/32 or /128).
func loopbackUp(addrs []netip.Addr) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading lo's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	added := map[netip.Addr]bool{}
	for _, a := range addrs {
		if a.IsLoopback() || added[a] {
			continue
		}
		added[a] = true
		if a.Is4() {
			err = addIPv4(fd, fmt.Sprintf("lo:%d", len(added)), a)
		} else {
			err = addIPv6(a)
		}
		if err != nil {
			return fmt.Errorf("adding %s to lo: %w", a, err)
		}
	}
	return nil
}

// addIPv4 adds a to lo under label, as a /32.
func addIPv4(fd int, label string, a netip.Addr) error {
	for _, step := range []struct {
		req  uint
		addr [4]byte
	}{{unix.SIOCSIFADDR, a.As4()}, {unix.SIOCSIFNETMASK, [4]byte{255, 255, 255, 255}}} {
		ifr, err := unix.NewIfreq(label)
		if err != nil {
			return err
		}
		if err := ifr.SetInet4Addr(step.addr[:]); err != nil {
			return err
		}
		if err := unix.IoctlIfreq(fd, step.req, ifr); err != nil {
			return err
		}
	}
	return nil
}

// in6Ifreq is the kernel's struct in6_ifreq.
type in6Ifreq struct {
	addr      [16]byte
	prefixLen uint32
	ifIndex   int32
}

// addIPv6 adds a to lo as a /128.
func addIPv6(a netip.Addr) error {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket (is IPv6 enabled?): %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return err
	}
	req := in6Ifreq{addr: a.As16(), prefixLen: 128, ifIndex: int32(ifr.Uint32())}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCSIFADDR, uintptr(unsafe.Pointer(&req))); errno != 0 {
		return errno
	}
	return nil
}

// listenAt returns a TCP listening socket at a and port.
func listenAt(a netip.Addr, port uint16) (int, error) {
	var family int
	var sa unix.Sockaddr
	if a.Is4() {
		family, sa = unix.AF_INET, &unix.SockaddrInet4{Port: int(port), Addr: a.As4()}
	} else {
		family, sa = unix.AF_INET6, &unix.SockaddrInet6{Port: int(port), Addr: a.As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	// An IPv6 address just added is tentative until the kernel's duplicate
	// address detection, which loopback skips but still finishes in a work
	// queue, has run: a bind in between fails with EADDRNOTAVAIL. Free
	// binding takes the address as it is; it is valid long before the
	// plugin, which the init has not started yet, connects.
	if !a.Is4() {
		if err := unix.SetsockoptInt(fd, unix.SOL_IPV6, unix.IPV6_FREEBIND, 1); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	if err := errors.Join(unix.Bind(fd, sa), unix.Listen(fd, 128)); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// receiveListeners, in outboxd, reads the n listeners the init hands
// over on conn. None and no error means the init ended first: it
// reports why on its error pipe.
func receiveListeners(conn *os.File, n int) ([]net.Listener, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	oob := make([]byte, unix.CmsgSpace(4*n))
	var oobn int
	var rerr error
	err = raw.Read(func(fd uintptr) bool {
		_, oobn, _, _, rerr = unix.Recvmsg(int(fd), make([]byte, 1), oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN
	})
	if err = errors.Join(err, rerr); err != nil || oobn == 0 {
		return nil, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("the listeners' message: %v", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil {
		return nil, err
	}
	lns := make([]net.Listener, 0, len(fds))
	for _, fd := range fds {
		f := os.NewFile(uintptr(fd), "sandbox-listener")
		ln, lerr := net.FileListener(f)
		f.Close()
		if lerr != nil {
			err = errors.Join(err, lerr)
			continue
		}
		lns = append(lns, ln)
	}
	if err == nil && len(lns) != n {
		err = fmt.Errorf("the init handed over %d listeners, not %d", len(lns), n)
	}
	if err != nil {
		for _, ln := range lns {
			ln.Close()
		}
		return nil, err
	}
	return lns, nil
}

// dialTimeout bounds each dial of a destination by the default Dial.
const dialTimeout = 10 * time.Second

// maxRelayed is how many connections of one sandbox are relayed at once;
// further ones wait in their listener's backlog.
const maxRelayed = 64

// relay copies between the connections accepted on the sandbox's
// listeners and the destinations they stand for, until close.
type relay struct {
	ctx    context.Context
	cancel context.CancelFunc
	dial   func(ctx context.Context, network, address string) (net.Conn, error)
	lns    []net.Listener
	wg     sync.WaitGroup
	// slots holds one token per connection being relayed.
	slots chan struct{}

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// startRelay serves lns, the listeners of dests in order.
func startRelay(ctx context.Context, lns []net.Listener, dests []Destination,
	dial func(ctx context.Context, network, address string) (net.Conn, error)) *relay {
	if dial == nil {
		dial = (&net.Dialer{Timeout: dialTimeout}).DialContext
	}
	r := &relay{dial: dial, lns: lns, conns: map[net.Conn]struct{}{}, slots: make(chan struct{}, maxRelayed)}
	r.ctx, r.cancel = context.WithCancel(ctx)
	for i, ln := range lns {
		dest := net.JoinHostPort(dests[i].Host, strconv.Itoa(int(dests[i].Port)))
		r.wg.Go(func() {
			for {
				select {
				case r.slots <- struct{}{}:
				case <-r.ctx.Done():
					return
				}
				in, err := ln.Accept()
				if err != nil {
					return
				}
				r.wg.Go(func() {
					defer func() { <-r.slots }()
					r.pipe(in, dest)
				})
			}
		})
	}
	return r
}

// track keeps c to be closed by close; false when close came first.
func (r *relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.Close()
}

// pipe dials dest for in and copies both ways; a dial that fails (or
// that Dial refuses) closes in, which the program sees as a reset.
func (r *relay) pipe(in net.Conn, dest string) {
	if !r.track(in) {
		in.Close()
		return
	}
	defer r.untrack(in)
	out, err := r.dial(r.ctx, "tcp", dest)
	if err != nil {
		return
	}
	if !r.track(out) {
		out.Close()
		return
	}
	defer r.untrack(out)
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyHalf(out, in)
	}()
	copyHalf(in, out)
	<-done
}

// copyHalf copies from src to dst, then ends dst's writing side.
func copyHalf(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// close stops accepting, ends every relayed connection and waits for
// the relay's goroutines.
func (r *relay) close() {
	r.cancel()
	for _, ln := range r.lns {
		ln.Close()
	}
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
