package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// TestAuditVerify exports a real organization's trail from a running
// outboxd and checks it with `outboxd audit verify`, as its own process
// and through its cobra command: the export passes with its count; a line
// altered, deleted or moved fails with exit code 1, naming the first
// broken entry.
func TestAuditVerify(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	for _, p := range []string{"#a", "#b", "#c"} {
		r := b.Do("PUT", "/v1/do-not-contact", b.Admin(), map[string]any{"patterns": []string{p}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	}
	r := b.Do("PUT", "/v1/action-modes", b.Owner(), map[string]string{"slack:send_message": "deny"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = b.Do("GET", "/v1/audit/export", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	export := string(r.Raw)
	lines := strings.SplitAfter(strings.TrimSuffix(export, "\n"), "\n")
	require.Len(t, lines, 4)

	dir := t.TempDir()
	write := func(name string, lines ...string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600))
		return path
	}
	good := write("good.jsonl", lines...)

	// As a process.
	run := func(path string) (int, string, string) {
		cmd := exec.Command(os.Args[0], "audit", "verify", path)
		cmd.Env = append(os.Environ(), "OUTBOXD_TEST_MAIN=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exitErr *exec.ExitError
		if err != nil {
			require.ErrorAs(t, err, &exitErr)
		}
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
	code, stdout, stderr := run(good)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "OK, 4 entries")

	code, _, stderr = run(write("altered.jsonl", lines[0], strings.Replace(lines[1], "#b", "#z", 1), lines[2], lines[3]))
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "line 2 (seq 2)")
	require.Contains(t, stderr, "altered")

	// Through the cobra command.
	verify := func(path string) (string, error) {
		cmd := newAuditCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs([]string{"verify", path})
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := verify(good)
	require.NoError(t, err)
	require.Contains(t, out, "OK, 4 entries")
	out, err = verify(write("deleted.jsonl", lines[0], lines[2], lines[3]))
	require.ErrorIs(t, err, errVerifyFailed)
	require.Contains(t, out, "seq 3 follows seq 1")
	out, err = verify(write("reordered.jsonl", lines[0], lines[2], lines[1], lines[3]))
	require.ErrorIs(t, err, errVerifyFailed)
	require.Contains(t, out, "line 2 (seq 3)")
	out, err = verify(write("head-cut.jsonl", lines[1:]...))
	require.ErrorIs(t, err, errVerifyFailed)
	require.Contains(t, out, "not 1")
}
