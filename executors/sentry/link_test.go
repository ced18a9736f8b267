package sentry

import (
	"net/http"
	"testing"
)

// FuzzNextCursor checks that no Link header, however malformed, makes the
// parser panic or loop, and that a cursor it returns is never empty.
func FuzzNextCursor(f *testing.F) {
	f.Add(`<https://sentry.io/api/0/projects/acme/web/issues/?&cursor=0:100:0>; rel="next"; results="true"; cursor="0:100:0"`)
	f.Add(`<a>; rel="previous"; results="false"; cursor="0:0:1", <b?cursor=1:2:0>; rel=next; results=true`)
	f.Add(`<a>; title="x \"y\", z"; rel="next"; results="true"; cursor="7:0:0"`)
	f.Add(`<a>; rel="next"; results="true"; cursor="1:1:1`)
	f.Add(`garbage, <>;;;=, <`)
	f.Fuzz(func(t *testing.T, value string) {
		if c := nextCursor(http.Header{"Link": {value}}); c != nil && *c == "" {
			t.Fatalf("empty cursor from %q", value)
		}
	})
}
