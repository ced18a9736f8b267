package worker

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRiverLogger_LowersInfoToDebug(t *testing.T) {
	t.Parallel()

	var buf bytes.Buffer
	logger := riverLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	logger.Info("River client started", "client_id", "c1")
	require.Empty(t, buf.String(), "River's INFO is hidden at log.level=info")
	logger.Warn("job rescued")
	require.Contains(t, buf.String(), "level=WARN msg=\"job rescued\" component=river")

	buf.Reset()
	logger = riverLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	logger.With("queue", "actions").Info("queue started")
	require.Contains(t, buf.String(), "level=DEBUG msg=\"queue started\" component=river queue=actions")
}
