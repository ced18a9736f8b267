// Package netguard is the private network guard of outbound connections to
// addresses an organization chose (MCP connectors, webhooks, databases):
// unless private networks are allowed, only public unicast addresses may be
// reached. Control checks the address actually dialed, after DNS
// resolution, so a name cannot be pointed at an internal address later.
package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// ErrNotAllowed is the cause of every refusal of an address, so callers
// find it however deep a client library wrapped it.
var ErrNotAllowed = errors.New("address not allowed")

// AddrError is the refusal of one resolved address.
type AddrError struct {
	Addr netip.Addr
}

func (e *AddrError) Error() string {
	return fmt.Sprintf("address %s is in a private, loopback, link-local or otherwise internal range; set connectors.allow_private_networks to allow it", e.Addr)
}

// Unwrap returns ErrNotAllowed.
func (e *AddrError) Unwrap() error { return ErrNotAllowed }

// blockedPrefixes are ranges refused on top of what netip classifies as
// loopback, private, link-local, multicast or unspecified: shared address
// space (used by some cloud metadata services), IETF protocol assignments,
// benchmarking, reserved space, the deprecated IPv6 forms that tunnel or
// embed IPv4, and the IPv6 forms a translator of the network's own turns
// into an IPv4 address: the local-use NAT64 prefix (RFC 8215), where the
// IPv4 address may sit anywhere, and SIIT's IPv4-translated addresses
// (::ffff:0:a.b.c.d, RFC 2765), which netip does not take as IPv4-mapped.
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("::ffff:0:0:0/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001::/32"),
	netip.MustParsePrefix("fec0::/10"),
}

// embeddedIPv4Prefixes are IPv6 ranges that carry an IPv4 address: NAT64
// (the IPv4 address in the last four bytes) and 6to4 (in bytes 2 to 5). An
// address in them is refused when the IPv4 address it reaches is.
var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// AddrAllowed reports whether addr may be reached when private networks are
// not allowed. Only global unicast addresses outside the private and
// special-purpose ranges pass, which also covers the cloud metadata
// endpoints 169.254.169.254 (link-local) and fd00:ec2::254 (unique local).
func AddrAllowed(addr netip.Addr) bool {
	addr = addr.Unmap().WithZone("")
	if !addr.IsValid() || !addr.IsGlobalUnicast() || addr.IsPrivate() {
		return false
	}
	for _, p := range blockedPrefixes {
		if p.Contains(addr) {
			return false
		}
	}
	if nat64Prefix.Contains(addr) {
		b := addr.As16()
		return AddrAllowed(netip.AddrFrom4([4]byte(b[12:16])))
	}
	if sixToFour.Contains(addr) {
		b := addr.As16()
		return AddrAllowed(netip.AddrFrom4([4]byte(b[2:6])))
	}
	return true
}

// Control is a net.Dialer Control function refusing connections to
// internal addresses (an *AddrError) and anything that is not an IP
// address, such as a Unix socket. It sees the address actually being
// dialed, after DNS resolution, so it holds for every name, every redirect
// and every address tried by Happy Eyeballs.
func Control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("dial guard: %w: %w", ErrNotAllowed, err)
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("dial guard: %w: %w", ErrNotAllowed, err)
	}
	if !AddrAllowed(addr) {
		return &AddrError{Addr: addr}
	}
	return nil
}
