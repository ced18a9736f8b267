// Command outboxd executes AI-agent actions on external services safely:
// policy modes, approvals, and River workers with retries and expiry.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	// Quiet hours name IANA zones: the zone database goes with the binary,
	// so every API and worker host reads a window the same way, tzdata
	// installed or not.
	_ "time/tzdata"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			fmt.Fprintln(os.Stderr, "outboxd:", ee.err)
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "outboxd:", err)
		os.Exit(1)
	}
}

// exitError ends the process with a specific exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
