package worker

import (
	"context"
	"log/slog"
)

// quietHandler lowers River's INFO records (clients and queues starting and
// stopping, leadership, maintenance) to DEBUG: they are River's internals,
// not outboxd's events, and clutter the console. log.level=debug shows them.
// Warnings and errors keep their level.
type quietHandler struct {
	slog.Handler
}

// riverLogger is the logger River is given.
func riverLogger(logger *slog.Logger) *slog.Logger {
	return slog.New(quietHandler{logger.Handler()}).With("component", "river")
}

func (h quietHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.Handler.Enabled(ctx, lowered(level))
}

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = lowered(r.Level)
	return h.Handler.Handle(ctx, r)
}

func (h quietHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietHandler{h.Handler.WithAttrs(attrs)}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.Handler.WithGroup(name)}
}

func lowered(level slog.Level) slog.Level {
	if level == slog.LevelInfo {
		return slog.LevelDebug
	}
	return level
}
