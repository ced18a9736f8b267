//go:build unix

package pglaunch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// fallbackRoot is where clusters go when the unprivileged server user cannot
// reach the configured data directory. /var/tmp, unlike /tmp, usually
// survives reboots, so `outboxd dev` run as root keeps its data.
var fallbackRoot = "/var/tmp"

// account is the unprivileged user that initdb and postgres run as when the
// caller is root.
type account struct {
	name string
	uid  uint32
	gid  uint32
	home string
}

// serverAccount returns the user to run PostgreSQL as, or nil when the
// current user can run it directly.
func serverAccount() (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var errs []error
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uid, err := strconv.ParseUint(u.Uid, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("parsing uid of user %q: %w", name, err)
		}
		gid, err := strconv.ParseUint(u.Gid, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("parsing gid of user %q: %w", name, err)
		}
		return &account{name: name, uid: uint32(uid), gid: uint32(gid), home: u.HomeDir}, nil
	}
	return nil, fmt.Errorf("PostgreSQL cannot run as root and neither a postgres nor a nobody user exists: %w",
		errors.Join(errs...))
}

// credential makes a child process run as the account with no supplementary
// groups, so that it holds none of root's group memberships.
func (a *account) credential() *syscall.Credential {
	return &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: []uint32{}}
}

// prepareDataDir creates the data directory (but not the cluster in it) and
// returns the absolute path of the directory the server will use. Running as
// root, that directory belongs to acct and may be in a fallback directory,
// which is then returned too; see the package documentation.
func prepareDataDir(logical string, acct *account, logger *slog.Logger) (dir, fallback string, err error) {
	abs, err := filepath.Abs(logical)
	if err != nil {
		return "", "", fmt.Errorf("resolving data directory %s: %w", logical, err)
	}
	if acct == nil {
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return "", "", fmt.Errorf("creating data directory: %w", err)
		}
		return abs, "", checkClusterDir(abs)
	}

	target := abs
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		target = real
	}
	parent, err := resolveExisting(filepath.Dir(target))
	if err != nil {
		return "", "", err
	}
	blocker, err := untraversable(parent, acct)
	if err != nil {
		return "", "", err
	}
	if blocker == "" {
		dir := filepath.Join(parent, filepath.Base(target))
		if err := handOver(dir, acct); err != nil {
			return "", "", err
		}
		return dir, "", nil
	}

	if _, err := os.Stat(filepath.Join(target, "PG_VERSION")); err == nil {
		return "", "", fmt.Errorf("data directory %s holds a cluster, but user %q, which PostgreSQL runs as "+
			"because it refuses to run as root, cannot reach it: %s is not searchable by that user; "+
			"make it searchable (chmod o+x) or run as another user", abs, acct.name, blocker)
	}
	base := fallbackBase(abs)
	if err := makeFallbackBase(base); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(base, OwnerFile), []byte(abs+"\n"), 0o644); err != nil {
		return "", "", fmt.Errorf("recording the data directory in %s: %w", base, err)
	}
	if blocker, err := untraversable(base, acct); err != nil || blocker != "" {
		return "", "", errors.Join(err, fmt.Errorf("fallback directory %s is not reachable by user %q (%s is not searchable)",
			base, acct.name, blocker))
	}
	dir = filepath.Join(base, "data")
	if err := handOver(dir, acct); err != nil {
		return "", "", err
	}
	logger.Info("data directory is not reachable by the unprivileged PostgreSQL user; keeping the data elsewhere",
		"data_dir", abs, "physical_data_dir", dir, "user", acct.name, "blocked_at", blocker)
	return dir, base, nil
}

// handOver creates dir if needed, makes sure it can hold a cluster, and gives
// it and everything in it to acct.
func handOver(dir string, acct *account) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating data directory: %w", err)
	}
	if err := checkClusterDir(dir); err != nil {
		return err
	}
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return chownTo(path, acct)
	})
	if err != nil {
		return fmt.Errorf("handing data directory to user %q: %w", acct.name, err)
	}
	return nil
}

func chownTo(path string, acct *account) error {
	info, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Uid == acct.uid && st.Gid == acct.gid {
		return nil
	}
	return os.Lchown(path, int(acct.uid), int(acct.gid))
}

// checkClusterDir refuses a directory that holds files but no cluster, so
// that a mistyped DataDir is neither handed to another user nor passed to
// initdb.
func checkClusterDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading data directory: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("data directory %s is not empty but holds no PostgreSQL cluster (no PG_VERSION)", dir)
	}
	return nil
}

// resolveExisting creates the missing parts of dir, searchable by everyone so
// that the server user can pass through them, and returns dir with symbolic
// links resolved so that its real ancestors can be checked.
func resolveExisting(dir string) (string, error) {
	var missing []string
	existing := dir
	for {
		if _, err := os.Stat(existing); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("inspecting %s: %w", existing, err)
		}
		missing = append(missing, filepath.Base(existing))
		existing = filepath.Dir(existing)
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", existing, err)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		real = filepath.Join(real, missing[i])
		if err := os.Mkdir(real, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("creating %s: %w", real, err)
		}
		if err := os.Chmod(real, 0o755); err != nil {
			return "", fmt.Errorf("creating %s: %w", real, err)
		}
	}
	return real, nil
}

// untraversable returns the first directory on the way from / to dir that
// acct may not search, or "" if acct can reach dir. It judges by mode bits
// and the account's primary group, which is all the server process keeps.
func untraversable(dir string, acct *account) (string, error) {
	var chain []string
	for p := dir; ; p = filepath.Dir(p) {
		chain = append(chain, p)
		if p == filepath.Dir(p) {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		info, err := os.Stat(chain[i])
		if err != nil {
			return "", fmt.Errorf("inspecting %s: %w", chain[i], err)
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			continue
		}
		perm := uint32(info.Mode().Perm())
		var searchable bool
		switch {
		case st.Uid == acct.uid:
			searchable = perm&0o100 != 0
		case st.Gid == acct.gid:
			searchable = perm&0o010 != 0
		default:
			searchable = perm&0o001 != 0
		}
		if !searchable {
			return chain[i], nil
		}
	}
	return "", nil
}

// OwnerFile is the file of a fallback directory (see the package
// documentation) that names the configured data directory the cluster
// belongs to, and so the checkout that made it, for whoever finds the
// directory in /var/tmp.
const OwnerFile = "data-dir.txt"

// fallbackBase returns the directory holding the cluster and log for the
// absolute data directory abs when root cannot hand abs to the server user.
func fallbackBase(abs string) string {
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(fallbackRoot, "outboxd-pg-"+hex.EncodeToString(sum[:])[:12])
}

// makeFallbackBase creates the per-cluster directory under fallbackRoot,
// root's and writable only by root.
func makeFallbackBase(base string) error {
	return claimDir(base, 0o755, 0, 0, "fallback directory")
}

// claimDir creates dir with mode perm for uid:gid. The name is predictable
// and its parent world-writable, so an existing entry is used only if it is
// a directory of uid's with no permission beyond perm: one that someone else
// made is refused.
func claimDir(dir string, perm fs.FileMode, uid, gid uint32, what string) error {
	if err := os.Mkdir(dir, perm); err == nil {
		if err := os.Chmod(dir, perm); err != nil {
			return fmt.Errorf("creating %s: %w", what, err)
		}
		if uid != uint32(os.Geteuid()) {
			if err := os.Lchown(dir, int(uid), int(gid)); err != nil {
				return fmt.Errorf("creating %s: %w", what, err)
			}
		}
		return nil
	} else if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating %s: %w", what, err)
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("inspecting %s: %w", what, err)
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !info.IsDir() || !ok || st.Uid != uid || info.Mode().Perm()&^perm != 0 {
		return fmt.Errorf("refusing %s %s: it must be a directory of uid %d with no permission beyond %#o, "+
			"and it is not (another user may have made it); remove it", what, dir, uid, perm)
	}
	return nil
}

// RemoveCluster deletes the cluster configured as dataDir wherever its
// files are: dataDir itself and, when root kept the cluster in a fallback
// directory (see the package documentation), that directory too. It
// refuses while a server runs on the cluster and returns the directories it
// removed. Removing only dataDir would leave a fallback copy behind, which
// the next Start with the same dataDir would use again.
func RemoveCluster(dataDir string) ([]string, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("resolving data directory %s: %w", dataDir, err)
	}
	base := fallbackBase(abs)
	for _, dir := range []string{abs, filepath.Join(base, "data")} {
		if pid, ok := serverUsing(dir); ok {
			return nil, fmt.Errorf("%w: pid %d uses %s; stop it first", ErrAlreadyRunning, pid, dir)
		}
	}
	var removed []string
	for _, dir := range []string{abs, filepath.Join(base, "data")} {
		if err := removeSocketDir(socketDirFor(dir)); err != nil {
			return nil, fmt.Errorf("removing postgres socket directory: %w", err)
		}
	}
	if info, err := os.Lstat(base); err == nil {
		st, ok := info.Sys().(*syscall.Stat_t)
		if !info.IsDir() || !ok || st.Uid != 0 {
			return nil, fmt.Errorf("refusing to remove %s: it is not a directory owned by root", base)
		}
		if err := os.RemoveAll(base); err != nil {
			return nil, fmt.Errorf("removing postgres data: %w", err)
		}
		removed = append(removed, base)
	}
	if _, err := os.Lstat(abs); err == nil {
		if err := os.RemoveAll(abs); err != nil {
			return nil, fmt.Errorf("removing postgres data: %w", err)
		}
		removed = append(removed, abs)
	}
	return removed, nil
}

// serverUsing returns the pid of a live server recorded in dataDir's
// postmaster.pid.
func serverUsing(dataDir string) (int, bool) {
	data, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid == 0 {
		return 0, false
	}
	pid = max(pid, -pid)
	return pid, postgresUsesDir(pid, dataDir)
}
