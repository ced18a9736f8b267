// Package console serves the outboxd web console: the built assets of the
// front end in this directory (dist/, built by `make console` and
// committed, so the binary builds without npm), embedded in the binary.
//
// Index pages are never cached (they name the current assets); assets
// have content hashes in their names and are cached for a year. Every
// answer forbids framing and allows only the console's own origin, so a
// token pasted into the console can reach only this API.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
)

//go:embed all:dist
var dist embed.FS

// Prefix is where the console is served.
const Prefix = "/console/"

// InvocationURL is the address of an invocation's page in the console of
// the outboxd at origin ("https://outboxd.example.com"): where a human
// approves or denies it.
func InvocationURL(origin, id string) string {
	return origin + Prefix + "#/invocations/" + url.PathEscape(id)
}

// securityHeaders go on every console answer.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
	"X-Frame-Options":        "DENY",
}

type file struct {
	body        []byte
	contentType string
	etag        string
	immutable   bool
}

// Handler serves the console's files under Prefix (GET and HEAD), with
// index.html for Prefix itself.
func Handler() http.Handler {
	files := map[string]*file{}
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err)
	}
	_ = fs.WalkDir(sub, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(sub, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ct := mime.TypeByExtension(path.Ext(name))
		if ct == "" {
			ct = http.DetectContentType(body)
		}
		files[name] = &file{
			body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:16]) + `"`,
			immutable: strings.HasPrefix(name, "assets/"),
		}
		return nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		name := strings.TrimPrefix(r.URL.Path, Prefix)
		if name == "" || strings.HasSuffix(name, "/") {
			name += "index.html"
		}
		f, ok := files[name]
		if !ok {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", f.contentType)
		w.Header().Set("ETag", f.etag)
		if f.immutable {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		// ServeContent answers If-None-Match with 304 and handles HEAD
		// and ranges.
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
	})
}
