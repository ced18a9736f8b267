//go:build !unix

package httpserver

// openFileLimit is unknown here.
func openFileLimit() uint64 { return 0 }
