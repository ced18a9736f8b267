// Package etag makes the entity tags of settings that are replaced whole,
// and checks an If-Match header against them, so that a replacement made
// from a stale read is refused instead of silently winning.
package etag

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Of is the entity tag of v: a quoted hash of its JSON, the same for equal
// values whoever reads them.
func Of(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("etag: a value that is not JSON: " + err.Error()) // programmer error: settings are plain data
	}
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// Matches reports whether an If-Match header value admits current: ""
// (no precondition), "*", or a list of tags one of which is current (a
// weak tag W/"…" compares by its opaque part).
func Matches(ifMatch, current string) bool {
	ifMatch = strings.TrimSpace(ifMatch)
	if ifMatch == "" || ifMatch == "*" {
		return true
	}
	for tag := range strings.SplitSeq(ifMatch, ",") {
		if strings.TrimPrefix(strings.TrimSpace(tag), "W/") == current {
			return true
		}
	}
	return false
}
