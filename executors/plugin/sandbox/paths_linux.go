package sandbox

// systemPaths are the system's runtime paths every sandboxed program may
// read: programs, shared libraries, and the few /etc files the dynamic
// loader, node and TLS need. Not /etc/passwd, /proc, /tmp or anything of
// outboxd's. A sandbox with network gets its own /etc/hosts besides
// (openEgress), never the host's name resolution files.
var systemPaths = []string{
	"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/crypto-policies",
	"/etc/nsswitch.conf", "/etc/localtime", "/etc/alternatives",
}

// hiddenPaths are directories beneath the system paths that hold secrets
// rather than what programs need: private keys of TLS, and the
// configuration of software installed under /usr/local (which may be
// outboxd's own). A sandboxed program sees them empty.
var hiddenPaths = []string{"/etc/ssl/private", "/etc/pki/tls/private", "/etc/pki/CA/private", "/usr/local/etc"}

// devices are the device files every sandboxed program gets: the first
// read-write, the others read-only.
var devices = []string{"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"}
