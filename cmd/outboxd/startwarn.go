package main

import (
	"log/slog"

	"github.com/outboxd/outboxd/internal/app"
)

// warnNoMaxLifetime warns, once as `outboxd serve` starts a process that
// serves the API, when auth.max_lifetime is unset: the API then accepts a
// token of any lifetime (a 30-day one works for 30 days once leaked), and
// keeps its revocations for ever, since nothing bounds how long a revoked
// token would otherwise be accepted (package revocation). It has no
// default, which would refuse `outboxd dev`'s 30-day tokens and long-lived
// service tokens; dev does not warn.
func warnNoMaxLifetime(logger *slog.Logger, cfg *app.Config, role app.Role) {
	if role == app.RoleWorker || cfg.Auth.MaxLifetime > 0 {
		return
	}
	logger.Warn("auth.max_lifetime is not set: the API accepts bearer tokens of any lifetime (a leaked 30-day token works for 30 days) "+
		"and keeps its token revocations for ever; set it to the longest lifetime your tokens need (for example 24h, or 720h with 30-day service tokens)",
		"key", "auth.max_lifetime", "env", envOf("auth.max_lifetime"))
}
