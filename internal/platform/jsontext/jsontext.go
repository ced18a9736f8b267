// Package jsontext finds the text in a JSON document that Postgres cannot
// store (invalid UTF-8, NUL, half of a UTF-16 surrogate pair), naming the
// field, so that every front door (the REST API, the MCP front door)
// refuses it the same way before anything is recorded.
package jsontext

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is how deep Problem follows a body; encoding/json
// refuses deeper documents anyway.
const maxDepth = 10000

// TextProblem says why Postgres would refuse s as text, or "".
func TextProblem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character"
	}
	return ""
}

// IdentifierProblem says why s cannot be an identifier (an idempotency
// key, a path or query parameter), or "": text Postgres would refuse
// (TextProblem) or a control character.
func IdentifierProblem(s string) string {
	if problem := TextProblem(s); problem != "" {
		return problem
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return "contains a control character"
		}
	}
	return ""
}

// Problem finds, in a JSON body, the first string, key or value, at any
// depth (params and args included), that is not valid UTF-8, contains a
// NUL character (raw or as \u0000) or half of a UTF-16 surrogate pair
// (\ud800 without its other half): Postgres stores no NUL in text or
// jsonb, and replacing what cannot be stored, as encoding/json does with
// U+FFFD, would execute something other than what was asked. It returns
// the field's path (params.text, patterns[2]) and what is wrong, or two
// empty strings. A body that is not JSON passes, for the decoder to
// report.
func Problem(body []byte) (field, problem string) {
	if utf8.Valid(body) && !bytes.Contains(body, []byte(`\u0000`)) && loneSurrogate(body) == "" {
		return "", ""
	}
	type frame struct {
		object  bool
		wantKey bool
		key     string
		index   int
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.object {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(fieldName(f.key))
			} else {
				fmt.Fprintf(&b, "[%d]", f.index)
			}
		}
		return cmp.Or(b.String(), "body")
	}
	// valueDone moves the innermost container past the value just read.
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		if top := &stack[len(stack)-1]; top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return "", "" // io.EOF, or not JSON: the decoder reports it
		}
		raw := body[start:dec.InputOffset()]
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{', '[':
				if len(stack) >= maxDepth {
					return "", ""
				}
				stack = append(stack, frame{object: tok == '{', wantKey: tok == '{'})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			problem := rawStringProblem(raw, tok)
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				stack[n-1].key, stack[n-1].wantKey = tok, false
				if problem != "" {
					return path(), "the key " + path() + " " + problem
				}
				continue
			}
			if problem != "" {
				return path(), path() + " " + problem
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// rawStringProblem checks a string token both as written (the bytes
// between the tokens around it, which the decoder would have repaired) and
// as decoded.
func rawStringProblem(raw []byte, decoded string) string {
	if !utf8.Valid(raw) {
		return "is not valid UTF-8"
	}
	if esc := loneSurrogate(raw); esc != "" {
		return "contains " + esc + ", half of a UTF-16 surrogate pair without its other half"
	}
	return TextProblem(decoded)
}

// loneSurrogate returns the first \u escape in JSON text that is a UTF-16
// surrogate without its other half, or "". Backslashes occur only inside
// strings, so the text may be one string token or a whole document.
func loneSurrogate(text []byte) string {
	for i := 0; i < len(text); i++ {
		if text[i] != '\\' {
			continue
		}
		r := escapedRune(text[i:])
		if r < 0 {
			i++ // past the escaped character
			continue
		}
		esc := string(text[i : i+6])
		i += 5 // at the escape's last digit
		switch {
		case !utf16.IsSurrogate(r):
		case r >= 0xdc00: // a low half with no high half before it
			return esc
		default:
			if low := escapedRune(text[i+1:]); low < 0xdc00 || low > 0xdfff {
				return esc
			}
			i += 6
		}
	}
	return ""
}

// escapedRune is the code unit of a \uXXXX escape at the start of b, or -1.
func escapedRune(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	n, err := strconv.ParseUint(string(b[2:6]), 16, 16)
	if err != nil {
		return -1
	}
	return rune(n)
}

// fieldName is a key as it appears in a field path: as it is when it is
// printable, quoted otherwise.
func fieldName(key string) string {
	for _, r := range key {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError || r == '.' || r == '[' {
			return strconv.QuoteToASCII(key)
		}
	}
	return key
}
