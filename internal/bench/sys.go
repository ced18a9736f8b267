package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/platform/pglaunch"
)

// cpuUsed returns the CPU time used so far by this process and by the
// embedded Postgres (-1 without one): the postmaster with the children it
// reaped, plus its live children.
func (b *runner) cpuUsed() (self, pg time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if b.pgPID == 0 {
		return self, -1
	}
	pm := procStat(b.pgPID)
	if pm == nil {
		return self, -1
	}
	ticks := statTicks(pm, true)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == b.pgPID {
			continue
		}
		if f := procStat(pid); f != nil && f[1] == strconv.Itoa(b.pgPID) {
			ticks += statTicks(f, false)
		}
	}
	// USER_HZ is 100 on every Linux architecture Go supports.
	return self, time.Duration(ticks) * 10 * time.Millisecond
}

// procStat returns the fields of /proc/<pid>/stat from the state (field 3)
// on, nil when there is no such process. The command before them, in
// parentheses, may hold spaces.
func procStat(pid int) []string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(f) < 15 {
		return nil
	}
	return f
}

// statTicks is utime+stime (fields 14 and 15) of procStat's fields, plus
// the reaped children's cutime+cstime (16 and 17) when children is set.
func statTicks(f []string, children bool) int64 {
	fields := f[11:13]
	if children {
		fields = f[11:15]
	}
	var sum int64
	for _, v := range fields {
		n, _ := strconv.ParseInt(v, 10, 64)
		sum += n
	}
	return sum
}

// cpuDelta is after-before, or -1 when either is unknown.
func cpuDelta(before, after time.Duration) time.Duration {
	if before < 0 || after < 0 {
		return -1
	}
	return after - before
}

// resetPeakRSS restarts the kernel's peak RSS (VmHWM) from the current RSS,
// so the next peakRSS is the peak since now. It first returns the memory
// the Go runtime holds but no longer uses to the system, so that a phase's
// peak is not an earlier phase's memory the runtime has yet to give back.
// Where it cannot reset, peakRSS is the process's peak so far.
func resetPeakRSS() {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS is VmHWM of /proc/self/status in kB, or 0 where there is none.
func peakRSS() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(raw) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			var kb int64
			_, _ = fmt.Sscan(string(rest), &kb)
			return kb
		}
	}
	return 0
}

// benchDatabase returns a scratch database and the URL of the postgres
// database of its server: a new database on the server of serverURL, or
// on an embedded Postgres when serverURL is empty, whose process pgPID is
// (0 otherwise).
func benchDatabase(ctx context.Context, serverURL string) (dbURL, monitorURL string, pgPID int, cleanup func(), err error) {
	name := "outboxd_bench_" + randomHex(4)
	if serverURL == "" {
		dir, err := os.MkdirTemp("", "outboxd-bench-")
		if err != nil {
			return "", "", 0, nil, err
		}
		_ = os.Chmod(dir, 0o755)
		pg, err := pglaunch.Start(ctx, &pglaunch.Config{DataDir: dir + "/pg"})
		if err != nil {
			os.RemoveAll(dir)
			return "", "", 0, nil, err
		}
		cleanup := func() {
			_ = pg.Stop(context.Background())
			_ = pg.RemoveData()
			os.RemoveAll(dir)
		}
		if err := pg.CreateDatabase(ctx, name); err != nil {
			cleanup()
			return "", "", 0, nil, err
		}
		return pg.URL(name), pg.URL("postgres"), pg.PID(), cleanup, nil
	}
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", "", 0, nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", "", 0, nil, fmt.Errorf("creating a scratch database (the role needs CREATEDB): %w", err)
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", "", 0, nil, err
	}
	u.Path = "/" + name
	dbURL = u.String()
	u.Path = "/postgres"
	return dbURL, u.String(), 0, func() {
		c, err := pgx.Connect(context.Background(), serverURL)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// writeAllocs writes the allocations of the run so far to path.
func writeAllocs(path string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(out, 0); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
