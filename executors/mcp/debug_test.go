package mcp_test

import (
	"os"
	"runtime/pprof"
	"time"
)

func init() {
	go func() {
		time.Sleep(2500 * time.Millisecond)
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
	}()
}
