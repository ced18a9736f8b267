package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/retention"
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

	// Retention deletes the four entries once they are 400 days old: the
	// export starts with their anchor, an audit.prune entry follows, then
	// the changes made since; verify checks the chain from the anchor and
	// says so, and still finds a kept entry altered or deleted.
	later := time.Now().Add(402 * 24 * time.Hour)
	keep, err := retention.New(&retention.Deps{Pool: b.Pool, Now: func() time.Time { return later }}, &retention.Config{Batch: 10})
	require.NoError(t, err)
	rep, err := keep.Run(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 4, rep.Deleted["audit_entries"])
	for _, p := range []string{"#d", "#e"} {
		r := b.Do("PUT", "/v1/do-not-contact", b.Admin(), map[string]any{"patterns": []string{p}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	}
	r = b.Do("GET", "/v1/audit/export", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	lines = strings.SplitAfter(strings.TrimSuffix(string(r.Raw), "\n"), "\n")
	// The anchor, the audit.prune entry, the two changes.
	require.Len(t, lines, 4, string(r.Raw))
	require.Contains(t, lines[0], `{"anchor":{"organization_id":"`+apptest.Org+`","first_seq":5,`)
	require.Contains(t, lines[1], `"action":"audit.prune"`)
	pruned := write("pruned.jsonl", lines...)
	code, stdout, stderr = run(pruned)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "OK, 3 entries (seq 5 to 7), chain intact from its anchor: entries before seq 5 were deleted by retention")
	require.Contains(t, stdout, "cannot be checked from this file alone")
	code, _, stderr = run(write("pruned-altered.jsonl", lines[0], lines[1], strings.Replace(lines[2], "#d", "#z", 1), lines[3]))
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "line 3 (seq 6)")
	require.Contains(t, stderr, "altered")
	out, err = verify(write("pruned-deleted.jsonl", lines[0], lines[1], lines[3]))
	require.ErrorIs(t, err, errVerifyFailed)
	require.Contains(t, out, "seq 7 follows seq 5")
	out, err = verify(write("pruned-no-anchor.jsonl", lines[1:]...))
	require.ErrorIs(t, err, errVerifyFailed)
	require.Contains(t, out, "has no anchor")
}
