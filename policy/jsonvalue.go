package policy

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrInvalidJSON is returned when a document that must be hashed is not
// valid JSON.
var ErrInvalidJSON = errors.New("invalid JSON")

// kind is the JSON type of a value.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// value is an order-preserving JSON tree. encoding/json's map decoding would
// lose member order and duplicate keys and round numbers through float64;
// redaction and truncation must keep all three.
type value struct {
	kind kind
	// str is the literal text of a null, bool or number, or the decoded
	// text of a string.
	str     string
	elems   []value
	members []member
	// size is the compact encoded length, filled in by measure.
	size int
}

type member struct {
	key string
	val value
}

// parseJSON validates data with json.Valid (which also bounds nesting depth)
// and then builds the tree with a parser that can assume well-formed input.
func parseJSON(data []byte) (value, error) {
	if !json.Valid(data) {
		return value{}, ErrInvalidJSON
	}
	return parseValid(data), nil
}

// parseValid builds the tree for data that already passed json.Valid.
func parseValid(data []byte) value {
	p := parser{data: data}
	return p.value()
}

type parser struct {
	data []byte
	pos  int
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() value {
	p.skipSpace()
	switch p.data[p.pos] {
	case '{':
		p.pos++
		var members []member
		for {
			p.skipSpace()
			if p.data[p.pos] == '}' {
				p.pos++
				return value{kind: kindObject, members: members}
			}
			if p.data[p.pos] == ',' {
				p.pos++
				p.skipSpace()
			}
			key := p.string()
			p.skipSpace()
			p.pos++ // ':'
			members = append(members, member{key: key, val: p.value()})
		}
	case '[':
		p.pos++
		var elems []value
		for {
			p.skipSpace()
			if p.data[p.pos] == ']' {
				p.pos++
				return value{kind: kindArray, elems: elems}
			}
			if p.data[p.pos] == ',' {
				p.pos++
			}
			elems = append(elems, p.value())
		}
	case '"':
		return value{kind: kindString, str: p.string()}
	case 't':
		p.pos += len("true")
		return value{kind: kindBool, str: "true"}
	case 'f':
		p.pos += len("false")
		return value{kind: kindBool, str: "false"}
	case 'n':
		p.pos += len("null")
		return value{kind: kindNull, str: "null"}
	default:
		start := p.pos
		for p.pos < len(p.data) {
			switch p.data[p.pos] {
			case '-', '+', '.', 'e', 'E', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
				p.pos++
				continue
			}
			break
		}
		return value{kind: kindNumber, str: string(p.data[start:p.pos])}
	}
}

// string consumes a JSON string and returns its decoded text, always valid
// UTF-8 (invalid bytes become U+FFFD, as encoding/json does).
func (p *parser) string() string {
	start := p.pos
	p.pos++ // opening quote
	escaped, nonASCII := false, false
	for {
		c := p.data[p.pos]
		if c == '"' {
			break
		}
		if c == '\\' {
			escaped = true
			p.pos += 2
			continue
		}
		if c >= utf8.RuneSelf {
			nonASCII = true
		}
		p.pos++
	}
	p.pos++ // closing quote
	raw := p.data[start:p.pos]
	if !escaped && (!nonASCII || utf8.Valid(raw)) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		// Unreachable for input that passed json.Valid.
		panic("policy: decoding validated JSON string: " + err.Error())
	}
	return s
}

// appendValue appends the compact encoding of v.
func appendValue(dst []byte, v *value) []byte {
	switch v.kind {
	case kindString:
		return appendString(dst, v.str)
	case kindArray:
		dst = append(dst, '[')
		for i := range v.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendValue(dst, &v.elems[i])
		}
		return append(dst, ']')
	case kindObject:
		dst = append(dst, '{')
		for i := range v.members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, v.members[i].key)
			dst = append(dst, ':')
			dst = appendValue(dst, &v.members[i].val)
		}
		return append(dst, '}')
	case kindNumber:
		if !jsonbNumber(v.str) {
			return appendString(dst, v.str)
		}
	}
	return append(dst, v.str...)
}

// measure fills in size for v and every value below it and returns v.size.
func measure(v *value) int {
	switch v.kind {
	case kindString:
		v.size = stringSize(v.str)
	case kindArray:
		n := 2
		for i := range v.elems {
			if i > 0 {
				n++
			}
			n += measure(&v.elems[i])
		}
		v.size = n
	case kindObject:
		n := 2
		for i := range v.members {
			if i > 0 {
				n++
			}
			n += stringSize(v.members[i].key) + 1 + measure(&v.members[i].val)
		}
		v.size = n
	case kindNumber:
		v.size = len(v.str)
		if !jsonbNumber(v.str) {
			v.size = stringSize(v.str)
		}
	default:
		v.size = len(v.str)
	}
	return v.size
}

// StorableAsWritten reports whether doc is valid JSON that Postgres's
// jsonb, where outboxd stores documents, holds as written: every number
// within jsonbNumber's bounds and no string or key with a NUL (\u0000).
// Redact writes any other such number as a string and a NUL as U+FFFD; a
// caller that must keep a document as it is can keep it as text instead.
func StorableAsWritten(doc []byte) bool {
	v, err := parseJSON(doc)
	return err == nil && storableAsWritten(&v)
}

func storableAsWritten(v *value) bool {
	switch v.kind {
	case kindNumber:
		return jsonbNumber(v.str)
	case kindString:
		return strings.IndexByte(v.str, 0) < 0
	case kindArray:
		for i := range v.elems {
			if !storableAsWritten(&v.elems[i]) {
				return false
			}
		}
	case kindObject:
		for i := range v.members {
			if strings.IndexByte(v.members[i].key, 0) >= 0 || !storableAsWritten(&v.members[i].val) {
				return false
			}
		}
	}
	return true
}

// jsonbNumber reports whether Postgres's jsonb, where outboxd stores
// documents, can hold the JSON number literal lit: at most 131072 digits
// before the decimal point and 16383 after, once the exponent is applied
// (a zero has none before it). Documents are written with such a number
// as a string of its text instead (1e999999 becomes "1e999999"): a
// provider's answer holding one could not be stored, and its job would
// run the call again.
func jsonbNumber(lit string) bool {
	const maxBefore, maxAfter = 131072, 16383
	if len(lit) < maxAfter && !strings.ContainsAny(lit, "eE") {
		return true
	}
	mantissa, exp := lit, 0
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		e, err := strconv.Atoi(lit[i+1:])
		if err != nil || e > 1<<30 || e < -(1<<30) {
			return false
		}
		mantissa, exp = lit[:i], e
	}
	whole, frac, _ := strings.Cut(strings.TrimPrefix(mantissa, "-"), ".")
	if len(frac)-exp > maxAfter {
		return false
	}
	digits := whole + frac
	significant := strings.TrimLeft(digits, "0")
	if significant == "" {
		return true
	}
	// The power of ten of the first significant digit.
	power := len(whole) - 1 - (len(digits) - len(significant)) + exp
	return power < maxBefore
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Unlike encoding/json it does not
// escape <, > and &, which keeps stored documents readable; invalid UTF-8 is
// replaced with U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendStringContent(dst, s)
	return append(dst, '"')
}

func appendStringContent(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case 0:
				// Postgres refuses \u0000 in jsonb; U+FFFD keeps every
				// document outboxd writes storable.
				dst = append(dst, "\uFFFD"...)
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, width := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && width == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += width
	}
	return append(dst, s[start:]...)
}

// stringSize is len(appendString(nil, s)) without allocating.
func stringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		if c := s[i]; c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			n++
			i++
			continue
		}
		r, width := utf8.DecodeRuneInString(s[i:])
		n += runeSize(r, width)
		i += width
	}
	return n
}

// runeSize is the encoded length of one decoded rune inside a JSON string.
func runeSize(r rune, width int) int {
	switch {
	case r == utf8.RuneError && width == 1:
		return len(`\ufffd`)
	case r == 0:
		return len("\uFFFD")
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
		return 2
	case r < 0x20:
		return len(`\u0000`)
	default:
		return width
	}
}

// isJSONSpace reports whether c is insignificant whitespace in JSON.
func isJSONSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// isBlank reports whether doc holds nothing but JSON whitespace.
func isBlank(doc []byte) bool {
	for _, c := range doc {
		if !isJSONSpace(c) {
			return false
		}
	}
	return true
}

// nonSpaceLen counts the bytes of doc that are not JSON whitespace, a lower
// bound on the length of its compact form.
func nonSpaceLen(doc []byte) int {
	n := 0
	for _, c := range doc {
		if !isJSONSpace(c) {
			n++
		}
	}
	return n
}
