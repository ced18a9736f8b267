package bench

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestProcStat: the fields of /proc/<pid>/stat the bench reads CPU from.
func TestProcStat(t *testing.T) {
	f := procStat(os.Getpid())
	require.NotNil(t, f)
	require.Equal(t, strconv.Itoa(os.Getppid()), f[1], "field 4 is the parent")
	// A test binary has run for more than a clock tick by now; spin in case.
	for deadline := time.Now().Add(5 * time.Second); statTicks(f, false) == 0 && time.Now().Before(deadline); f = procStat(os.Getpid()) {
	}
	require.Positive(t, statTicks(f, false), "utime+stime")
	require.GreaterOrEqual(t, statTicks(f, true), statTicks(f, false))
	require.Nil(t, procStat(-1))
}
