package sentry

import (
	"net/http"
	"net/url"
	"strings"
)

// link is one link-value of a Link header (RFC 8288): its target and its
// parameters, names lower-cased, first occurrence kept.
type link struct {
	target string
	params map[string]string
}

// nextCursor returns the cursor of the next page from Sentry's Link header,
// or nil when there is none. Sentry always sends a rel="next" link and says
// with results="true" or "false" whether following it yields anything:
//
//	<https://sentry.io/api/0/projects/acme/web/issues/?&cursor=0:100:0>; rel="next"; results="true"; cursor="0:100:0"
//
// The cursor parameter is preferred; the target's cursor query parameter is
// the fallback.
func nextCursor(header http.Header) *string {
	for _, l := range parseLinks(header.Values("Link")) {
		if !hasRel(l.params["rel"], "next") {
			continue
		}
		if !strings.EqualFold(l.params["results"], "true") {
			return nil
		}
		cursor := l.params["cursor"]
		if cursor == "" {
			if u, err := url.Parse(l.target); err == nil {
				cursor = u.Query().Get("cursor")
			}
		}
		if cursor == "" {
			return nil
		}
		return &cursor
	}
	return nil
}

// hasRel reports whether the space-separated relation types of a rel
// parameter include want.
func hasRel(rel, want string) bool {
	for _, r := range strings.Fields(rel) {
		if strings.EqualFold(r, want) {
			return true
		}
	}
	return false
}

// parseLinks parses Link header values. A malformed link-value ends the
// parse of its header value; the links before it are kept.
func parseLinks(values []string) []link {
	var links []link
	for _, v := range values {
		p := linkParser{s: v}
		for {
			l, ok := p.next()
			if !ok {
				break
			}
			links = append(links, l)
		}
	}
	return links
}

// linkParser reads link-values from one Link header value.
type linkParser struct {
	s string
}

func (p *linkParser) skipSpace() {
	p.s = strings.TrimLeft(p.s, " \t")
}

// next reads one `<target>; name="value"; name=token` link-value and the
// comma that ends it.
func (p *linkParser) next() (link, bool) {
	p.s = strings.TrimLeft(p.s, " \t,")
	if !strings.HasPrefix(p.s, "<") {
		return link{}, false
	}
	end := strings.IndexByte(p.s, '>')
	if end < 0 {
		return link{}, false
	}
	l := link{target: p.s[1:end], params: map[string]string{}}
	p.s = p.s[end+1:]

	for {
		p.skipSpace()
		if p.s == "" {
			return l, true
		}
		if p.s[0] == ',' {
			p.s = p.s[1:]
			return l, true
		}
		if p.s[0] != ';' {
			return link{}, false
		}
		p.s = p.s[1:]
		p.skipSpace()

		i := strings.IndexAny(p.s, "=;, \t")
		if i < 0 {
			i = len(p.s)
		}
		name := strings.ToLower(p.s[:i])
		p.s = p.s[i:]
		p.skipSpace()

		var value string
		if strings.HasPrefix(p.s, "=") {
			p.s = p.s[1:]
			p.skipSpace()
			var ok bool
			if value, ok = p.value(); !ok {
				return link{}, false
			}
		}
		if _, seen := l.params[name]; !seen && name != "" {
			l.params[name] = value
		}
	}
}

// value reads a quoted-string, with backslash escapes, or a token.
func (p *linkParser) value() (string, bool) {
	if !strings.HasPrefix(p.s, `"`) {
		i := strings.IndexAny(p.s, ";, \t")
		if i < 0 {
			i = len(p.s)
		}
		v := p.s[:i]
		p.s = p.s[i:]
		return v, true
	}
	var b strings.Builder
	for i := 1; i < len(p.s); i++ {
		switch c := p.s[i]; c {
		case '\\':
			if i+1 < len(p.s) {
				i++
				b.WriteByte(p.s[i])
			}
		case '"':
			p.s = p.s[i+1:]
			return b.String(), true
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}
