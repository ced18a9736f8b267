package console_test

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/console"
)

func get(t *testing.T, h http.Handler, path string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestHandler serves the index uncached and the hashed assets cached for
// a year, with their content types, ETags and a strict CSP.
func TestHandler(t *testing.T) {
	h := console.Handler()
	index := get(t, h, "/console/")
	require.Equal(t, http.StatusOK, index.Code)
	require.Equal(t, "text/html; charset=utf-8", index.Header().Get("Content-Type"))
	require.Equal(t, "no-cache", index.Header().Get("Cache-Control"))
	require.Contains(t, index.Header().Get("Content-Security-Policy"), "script-src 'self'")
	require.Contains(t, index.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'")
	require.Equal(t, "nosniff", index.Header().Get("X-Content-Type-Options"))
	require.NotContains(t, index.Body.String(), "http://", "no external resources")
	require.NotContains(t, index.Body.String(), "https://", "no external resources")
	require.NotContains(t, index.Body.String(), "<script>", "no inline script (the CSP forbids it)")

	refs := regexp.MustCompile(`(?:src|href)="(/console/assets/[^"]+)"`).FindAllStringSubmatch(index.Body.String(), -1)
	require.Len(t, refs, 2, "the index names one script and one stylesheet")
	types := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	for _, ref := range refs {
		asset := get(t, h, ref[1])
		require.Equal(t, http.StatusOK, asset.Code, ref[1])
		require.Equal(t, types[filepath.Ext(ref[1])], asset.Header().Get("Content-Type"), ref[1])
		require.Equal(t, "public, max-age=31536000, immutable", asset.Header().Get("Cache-Control"))
		etag := asset.Header().Get("ETag")
		require.NotEmpty(t, etag)
		require.Equal(t, http.StatusNotModified, get(t, h, ref[1], "If-None-Match", etag).Code)
	}
	require.Equal(t, http.StatusOK, get(t, h, "/console/index.html").Code)
	require.Equal(t, http.StatusNotFound, get(t, h, "/console/assets/nope.js").Code)
	require.Equal(t, http.StatusNotFound, get(t, h, "/console/../go.mod").Code)
}

var updateStamp = flag.Bool("update-stamp", false, "rewrite dist.sha256 after `make console` rebuilt dist/")

// sourceFiles are the inputs of the build, relative to this directory.
func sourceFiles(t *testing.T) []string {
	files := []string{"index.html", "package.json", "package-lock.json", "tsconfig.json", "vite.config.ts"}
	require.NoError(t, filepath.WalkDir("src", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, filepath.ToSlash(p))
		}
		return err
	}))
	return files
}

func digest(t *testing.T, files []string) string {
	slices.Sort(files)
	h := sha256.New()
	for _, f := range files {
		body, err := os.ReadFile(f)
		require.NoError(t, err)
		h.Write([]byte(f + "\x00"))
		h.Write(body)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestBuildIsCurrent fails when the console's sources or its committed
// dist/ changed without the other: `make console` rebuilds dist/ and
// records both digests in dist.sha256.
func TestBuildIsCurrent(t *testing.T) {
	var built []string
	require.NoError(t, filepath.WalkDir("dist", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			built = append(built, filepath.ToSlash(p))
		}
		return err
	}))
	stamp := "sources " + digest(t, sourceFiles(t)) + "\ndist " + digest(t, built) + "\n"
	if *updateStamp {
		require.NoError(t, os.WriteFile("dist.sha256", []byte(stamp), 0o644))
		return
	}
	want, err := os.ReadFile("dist.sha256")
	require.NoError(t, err)
	if string(want) != stamp {
		t.Fatalf("console/dist is not the build of console/src: run `make console` (it needs npm) and commit dist/ and dist.sha256\nrecorded:\n%s\nnow:\n%s",
			want, strings.TrimSpace(stamp))
	}
}
