package database

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/platform/netguard"
)

// errInvalidURL marks a stored URL that can no longer be used (saved
// before a rule existed, or by hand).
var errInvalidURL = errors.New("invalid database URL")

// Target is what may be shown of a database URL: its host (with the port
// when one is given) and its database name; never the user, the password
// or the parameters.
type Target struct {
	Host     string
	Database string
}

// urlParams are the query parameters a URL may carry. Others are refused:
// some read files on outboxd's host (sslrootcert, passfile, service), some
// change how statements are sent (default_query_exec_mode), and the rest
// would become session settings of the connection.
var urlParams = map[string]func(string) error{
	"sslmode": func(v string) error {
		switch v {
		case "disable", "allow", "prefer", "require", "verify-ca", "verify-full":
			return nil
		}
		return fmt.Errorf("sslmode %q: use disable, allow, prefer, require, verify-ca or verify-full", v)
	},
	"connect_timeout": func(v string) error {
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 60 {
			return fmt.Errorf("connect_timeout %q: use a number of seconds from 1 to 60", v)
		}
		return nil
	},
	"application_name": func(v string) error {
		if len(v) > 63 {
			return errors.New("application_name is longer than 63 bytes")
		}
		return nil
	},
}

// hostName is a DNS name: letters, digits, hyphens and dots.
var hostName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$`)

// CheckURL checks a database URL as the API does before saving one:
// postgres:// or postgresql:// with one host (a name or an address, no
// Unix socket), a user, a database name and only the parameters sslmode,
// connect_timeout and application_name. Unless allowPrivate, a literal
// address must not be in a refused range (netguard); names are checked
// when dialing. Errors never repeat the URL.
func CheckURL(raw string, allowPrivate bool) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Target{}, errors.New("the URL cannot be parsed: use postgres://user:password@host:5432/database")
	}
	if strings.Contains(raw, "%00") { // the driver refuses it at every connection
		return Target{}, errors.New("the URL must not contain a NUL character (%00)")
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return Target{}, errors.New("the URL must start with postgres:// or postgresql://")
	}
	if u.Opaque != "" || u.Fragment != "" || u.RawFragment != "" {
		return Target{}, errors.New("the URL must be postgres://user:password@host:5432/database")
	}
	host := u.Hostname()
	if host == "" {
		return Target{}, errors.New("the URL has no host")
	}
	addr, addrErr := netip.ParseAddr(host)
	if addrErr != nil && (!hostName.MatchString(host) || len(host) > 253) {
		return Target{}, errors.New("the URL's host must be one host name or IP address (several hosts and Unix sockets are not supported)")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return Target{}, errors.New("the URL's port must be a number from 1 to 65535")
		}
	}
	if u.User == nil || u.User.Username() == "" {
		return Target{}, errors.New("the URL has no user: use postgres://user:password@host/database")
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	if dbName == "" || strings.Contains(dbName, "/") {
		return Target{}, errors.New("the URL must name one database: postgres://user:password@host/database")
	}
	query, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return Target{}, errors.New("the URL's parameters cannot be parsed")
	}
	names := make([]string, 0, len(query))
	for name := range query {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		check, ok := urlParams[name]
		if !ok {
			return Target{}, fmt.Errorf("the URL parameter %q is not supported: only sslmode, connect_timeout and application_name are", name)
		}
		if len(query[name]) != 1 {
			return Target{}, fmt.Errorf("the URL parameter %q is given more than once", name)
		}
		if err := check(query[name][0]); err != nil {
			return Target{}, fmt.Errorf("the URL parameter %w", err)
		}
	}
	if !allowPrivate && addrErr == nil && !netguard.AddrAllowed(addr) {
		return Target{}, fmt.Errorf("%w: %w", netguard.ErrNotAllowed, &netguard.AddrError{Addr: addr})
	}
	return Target{Host: u.Host, Database: dbName}, nil
}

// poolConfig is the configuration of a database's pool: the URL checked
// again, with its host, port, user, password and database as the URL says
// and nothing taken from outboxd's environment (PGPASSWORD, a .pgpass
// file, a client certificate: PGSSLCERT, ~/.postgresql/postgresql.crt),
// every connection read-only by default, reading no message larger than
// MaxMessageBytes, dialed through the guard unless allowPrivate, and
// refused when it reaches outboxd's own database.
func poolConfig(raw string, cfg *Config) (*pgxpool.Config, error) {
	if _, err := CheckURL(raw, cfg.AllowPrivateNetworks); err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidURL, err)
	}
	u, _ := url.Parse(raw)
	// The URL names no certificate (CheckURL refuses sslcert): one the
	// driver would find is outboxd's own credential, never sent.
	sep := "?"
	if strings.Contains(raw, "?") {
		sep = "&"
	}
	pc, err := pgxpool.ParseConfig(raw + sep + "sslcertmode=disable")
	if err != nil {
		return nil, fmt.Errorf("%w: it cannot be parsed", errInvalidURL)
	}
	cc := pc.ConnConfig
	cc.Host = u.Hostname()
	cc.Port = 5432
	if p := u.Port(); p != "" {
		n, _ := strconv.Atoi(p)
		cc.Port = uint16(n)
	}
	cc.User = u.User.Username()
	cc.Password, _ = u.User.Password()
	cc.Database = strings.TrimPrefix(u.Path, "/")
	for _, fb := range cc.Fallbacks {
		fb.Host, fb.Port = cc.Host, cc.Port
	}
	appName := u.Query().Get("application_name")
	if appName == "" {
		appName = "outboxd"
	}
	cc.RuntimeParams = map[string]string{
		"application_name": appName,
		// The transaction each call opens is READ ONLY whatever this
		// says; this covers anything that would run outside it.
		"default_transaction_read_only": "on",
	}
	if u.Query().Get("connect_timeout") == "" {
		cc.ConnectTimeout = 10 * time.Second
	}
	dialer := &net.Dialer{Timeout: cc.ConnectTimeout, KeepAlive: 30 * time.Second}
	if !cfg.AllowPrivateNetworks {
		dialer.Control = netguard.Control
	}
	cc.DialFunc = dialer.DialContext
	cc.OnNotice, cc.OnNotification = nil, nil
	cc.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		f := pgproto3.NewFrontend(r, w)
		f.SetMaxBodyLen(MaxMessageBytes)
		return f
	}
	pc.MaxConns = cfg.MaxConns
	pc.MinConns = 0
	pc.MaxConnIdleTime = cfg.IdleTimeout
	if cfg.Own != (Identity{}) {
		pc.AfterConnect = refuseOwn(cfg.Own)
	}
	return pc, nil
}
