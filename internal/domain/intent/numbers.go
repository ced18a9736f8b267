package intent

import (
	"strconv"
	"strings"
)

// maxExponent bounds the exponents storedNumbers writes out: a number
// with a larger one keeps its literal (the worker then finds the stored
// params' spelling of it another intent, and asks again, never the
// reverse).
const maxExponent = 1000

// storedNumbers rewrites the number literals of canonical, a compact JSON
// document (policy.CanonicalJSON's), as Postgres's jsonb stores them
// (numeric_in then numeric_out): 1e2 is 100, 1.50e1 is 15.0, 1e-2 is
// 0.01, -0 is 0. Params are stored as jsonb and the worker computes the
// intent from what it reads back, so the intent sealed from the agent's
// own bytes must not depend on how a number was spelled; a literal
// without an exponent other than a negative zero is left as it is, so
// that such intents stay what they were.
func storedNumbers(canonical []byte) []byte {
	var out []byte
	start := 0
	for i := 0; i < len(canonical); {
		c := canonical[i]
		switch {
		case c == '"':
			i++
			for i < len(canonical) && canonical[i] != '"' {
				if canonical[i] == '\\' {
					i++
				}
				i++
			}
			i++
		case c == '-' || (c >= '0' && c <= '9'):
			j := i
			for j < len(canonical) && strings.IndexByte("0123456789+-.eE", canonical[j]) >= 0 {
				j++
			}
			lit := string(canonical[i:j])
			if n := numeric(lit); n != lit {
				out = append(append(out, canonical[start:i]...), n...)
				start = j
			}
			i = j
		default:
			i++
		}
	}
	if out == nil {
		return canonical
	}
	return append(out, canonical[start:]...)
}

// numeric is the JSON number literal lit as jsonb stores it; lit itself
// when its exponent is beyond maxExponent or it is not a number.
func numeric(lit string) string {
	neg := strings.HasPrefix(lit, "-")
	m := strings.TrimPrefix(lit, "-")
	exp := 0
	if i := strings.IndexAny(m, "eE"); i >= 0 {
		e, err := strconv.Atoi(m[i+1:])
		if err != nil || e > maxExponent || e < -maxExponent {
			return lit
		}
		m, exp = m[:i], e
	}
	whole, frac, _ := strings.Cut(m, ".")
	digits := whole + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return lit
	}
	// The value is digits × 10^(exp-len(frac)), written with as many
	// fractional digits as jsonb keeps: len(frac)-exp, at least none.
	var ip, fp string
	switch point := len(whole) + exp; {
	case point <= 0:
		ip, fp = "0", strings.Repeat("0", -point)+digits
	case point >= len(digits):
		ip = digits + strings.Repeat("0", point-len(digits))
	default:
		ip, fp = digits[:point], digits[point:]
	}
	if ip = strings.TrimLeft(ip, "0"); ip == "" {
		ip = "0"
	}
	if ip == "0" && strings.Trim(fp, "0") == "" {
		neg = false // numeric has no negative zero
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(ip)
	if fp != "" {
		b.WriteByte('.')
		b.WriteString(fp)
	}
	return b.String()
}
