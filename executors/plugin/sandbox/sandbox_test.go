package sandbox_test

import (
	"context"
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

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

// The program runs with the sandbox's rlimits.
func TestCommand_Rlimits(t *testing.T) {
	sh, err := filepath.EvalSymlinks("/bin/sh")
	require.NoError(t, err)
	// The two every sh knows by the same letters and units.
	s := spec(t, "/bin/sh", "-c", "echo $(ulimit -n) $(ulimit -H -n) $(ulimit -c)")
	s.Exec = []string{"/bin/sh", loader(t, sh)}
	out, err := run(t, s)
	require.NoError(t, err)
	require.Equal(t, "1024 1024 0\n", out)
}
