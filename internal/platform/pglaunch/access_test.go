//go:build unix

package pglaunch_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pglaunch"
	"github.com/outboxd/outboxd/internal/platform/pglaunch/pglaunchtest"
)

// TestStart_OnlyTheOwnerConnects: another local user reaches neither the
// socket nor, with TCP, the superuser.
func TestStart_OnlyTheOwnerConnects(t *testing.T) {
	t.Parallel()
	for _, tcp := range []bool{false, true} {
		t.Run(map[bool]string{false: "SocketOnly", true: "WithTCP"}[tcp], func(t *testing.T) {
			t.Parallel()
			s, err := pglaunch.Start(t.Context(), &pglaunch.Config{
				DataDir: filepath.Join(t.TempDir(), "data"),
				Logger:  slog.New(slog.NewTextHandler(t.Output(), nil)),
				Fast:    true,
				TCP:     tcp,
			})
			require.NoError(t, err)
			t.Cleanup(func() {
				require.NoError(t, s.Stop(context.Background()))
				require.NoError(t, s.RemoveData())
			})
			tcpPort := 0
			if tcp {
				tcpPort = s.Port()
			}
			pglaunchtest.RequireOwnerOnly(t, s.URL("postgres"), tcpPort)
		})
	}
}
