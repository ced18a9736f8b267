//go:build unix

package pglaunch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ErrBinariesNotFound reports that no PostgreSQL server installation was found,
// so callers such as test helpers can tell a missing installation apart from a
// server that failed to start.
var ErrBinariesNotFound = errors.New("PostgreSQL server binaries (initdb, postgres) not found")

// binDirGlobs lists where distributions and package managers install server
// binaries outside PATH. Debian and Ubuntu in particular put only wrapper
// scripts in PATH and keep initdb and postgres in /usr/lib/postgresql/<v>/bin.
var binDirGlobs = []string{
	"/usr/lib/postgresql/*/bin",
	"/usr/pgsql-*/bin",
	"/usr/local/pgsql/bin",
	"/opt/homebrew/opt/postgresql*/bin",
	"/usr/local/opt/postgresql*/bin",
	"/Applications/Postgres.app/Contents/Versions/*/bin",
}

var versionInPath = regexp.MustCompile(`\d+(?:\.\d+)*`)

// FindBinDir returns the directory holding the initdb and postgres programs.
// A directory in PATH wins, so that a developer can pick a version by putting
// it first; otherwise the highest version among the usual installation
// directories is used.
func FindBinDir() (string, error) {
	return findBinDir(os.Getenv("PATH"), binDirGlobs)
}

func findBinDir(pathList string, globs []string) (string, error) {
	for _, dir := range filepath.SplitList(pathList) {
		if dir != "" && filepath.IsAbs(dir) && hasServerBinaries(dir) {
			return dir, nil
		}
	}

	type candidate struct {
		dir     string
		version []int
	}
	var candidates []candidate
	for _, pattern := range globs {
		matches, _ := filepath.Glob(pattern)
		for _, dir := range matches {
			if hasServerBinaries(dir) {
				candidates = append(candidates, candidate{dir: dir, version: pathVersion(dir)})
			}
		}
	}
	if len(candidates) == 0 {
		return "", fmt.Errorf("%w: looked in PATH and in %s; install the PostgreSQL server "+
			"(Debian/Ubuntu: apt-get install postgresql; Fedora/RHEL: dnf install postgresql-server; "+
			"macOS: brew install postgresql@17), or put the directory holding initdb and postgres first in PATH",
			ErrBinariesNotFound, strings.Join(globs, ", "))
	}
	slices.SortStableFunc(candidates, func(a, b candidate) int {
		return -slices.Compare(a.version, b.version)
	})
	return candidates[0].dir, nil
}

// pathVersion extracts the version number from the directory above bin in an
// installation path such as /usr/lib/postgresql/15/bin or
// /opt/homebrew/opt/postgresql@16/bin; it returns nil for unversioned paths,
// which therefore sort last.
func pathVersion(binDir string) []int {
	match := versionInPath.FindString(filepath.Base(filepath.Dir(binDir)))
	if match == "" {
		return nil
	}
	var version []int
	for part := range strings.SplitSeq(match, ".") {
		n, _ := strconv.Atoi(part)
		version = append(version, n)
	}
	return version
}

func hasServerBinaries(dir string) bool {
	return isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres"))
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}

// checkBinDir explains up front when a configured BinDir is wrong, instead of
// leaving the user with an exec error for one of the programs.
func checkBinDir(dir string) error {
	if !hasServerBinaries(dir) {
		return fmt.Errorf("%w in %s", ErrBinariesNotFound, dir)
	}
	return nil
}
