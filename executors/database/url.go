package database

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"slices"
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

// driverSettings are the settings the driver (pgconn, pgx and pgxpool)
// takes from outboxd's host when a connection string leaves them out:
// the PG* environment variables (PGSSLMODE, PGSSLROOTCERT, PGOPTIONS,
// PGTARGETSESSIONATTRS...), the service PGSERVICE names, ~/.pgpass and
// the certificates of ~/.postgresql. poolConfig gives each one, so that
// none of them changes how a registered database is reached. sslmode and
// connect_timeout are the defaults a URL may override.
var driverSettings = map[string]string{
	"sslmode":         "prefer", // libpq's default
	"connect_timeout": "10",
	"passfile":        "",
	// No certificate but the server's, checked against the system's roots
	// when sslmode says so: the URL may name none, and one the driver
	// finds on outboxd's host is outboxd's own credential.
	"sslcertmode":          "disable",
	"sslcert":              "",
	"sslkey":               "",
	"sslpassword":          "",
	"sslrootcert":          "",
	"sslsni":               "1",
	"sslnegotiation":       "postgres",
	"krbsrvname":           "",
	"krbspn":               "",
	"target_session_attrs": "any",
	"min_protocol_version": "3.0",
	"max_protocol_version": "3.0",
	"channel_binding":      "prefer",
	"require_auth":         "",
	// pgx's and pgxpool's own, which only a service file could bring.
	"default_query_exec_mode":       "cache_statement",
	"statement_cache_capacity":      "512",
	"description_cache_capacity":    "512",
	"pool_min_conns":                "0",
	"pool_min_idle_conns":           "0",
	"pool_max_conn_lifetime":        "1h",
	"pool_max_conn_lifetime_jitter": "0s",
	"pool_health_check_period":      "1m",
	"pool_ping_timeout":             "0s",
}

// poolConfig is the configuration of a database's pool: the URL checked
// again, and the driver given its host, port, user, password, database,
// sslmode and connect_timeout and every other setting explicitly, so that
// nothing comes from outboxd's host (driverSettings); every connection
// read-only by default, reading no message larger than MaxMessageBytes,
// no COPY and no more than MaxNoticeBytes of one statement's notices
// (messageGuard), dialed through the guard unless allowPrivate, and
// refused when it reaches outboxd's own database, and each time a call
// takes it when its role is privileged (refusePrivileged).
func poolConfig(raw string, cfg *Config) (*pgxpool.Config, error) {
	if _, err := CheckURL(raw, cfg.AllowPrivateNetworks); err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidURL, err)
	}
	u, _ := url.Parse(raw)
	query := u.Query()
	settings := maps.Clone(driverSettings)
	settings["host"] = u.Hostname()
	settings["port"] = cmp.Or(u.Port(), "5432")
	settings["user"] = u.User.Username()
	settings["password"], _ = u.User.Password()
	settings["dbname"] = strings.TrimPrefix(u.Path, "/")
	for _, name := range []string{"sslmode", "connect_timeout"} {
		if v := query.Get(name); v != "" {
			settings[name] = v
		}
	}
	settings["pool_max_conns"] = strconv.Itoa(int(cfg.MaxConns))
	settings["pool_max_conn_idle_time"] = cfg.IdleTimeout.String()
	// Every setting is a parameter of an empty URL, each value escaped
	// whole (%20 for a space, as the driver reads URLs like libpq).
	var conn strings.Builder
	conn.WriteString("postgres://?")
	for i, name := range slices.Sorted(maps.Keys(settings)) {
		if i > 0 {
			conn.WriteByte('&')
		}
		conn.WriteString(name + "=" + strings.ReplaceAll(url.QueryEscape(settings[name]), "+", "%20"))
	}
	pc, err := pgxpool.ParseConfig(conn.String())
	if err != nil {
		if _, ok := os.LookupEnv("PGSERVICE"); ok {
			// The driver looks the service up whatever the connection
			// string says, and fails when it is not found.
			return nil, fmt.Errorf("%w: the Postgres driver cannot find the service that outboxd's environment names in PGSERVICE: unset it", errInvalidURL)
		}
		return nil, fmt.Errorf("%w: it cannot be parsed", errInvalidURL)
	}
	cc := pc.ConnConfig
	// The session's settings are outboxd's alone (not PGOPTIONS, PGTZ or
	// a service's options).
	cc.RuntimeParams = map[string]string{
		"application_name": cmp.Or(query.Get("application_name"), "outboxd"),
		// The transaction each call opens is READ ONLY whatever this
		// says; this covers anything that would run outside it.
		"default_transaction_read_only": "on",
	}
	dialer := &net.Dialer{Timeout: cc.ConnectTimeout, KeepAlive: 30 * time.Second}
	if !cfg.AllowPrivateNetworks {
		dialer.Control = netguard.Control
	}
	cc.DialFunc = dialer.DialContext
	cc.OnNotice, cc.OnNotification = nil, nil
	cc.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		f := pgproto3.NewFrontend(&messageGuard{r: r}, w)
		f.SetMaxBodyLen(MaxMessageBytes)
		return f
	}
	pc.AfterConnect = refuseOwnDatabase(cfg.Own)
	pc.PrepareConn = checkRole
	return pc, nil
}
