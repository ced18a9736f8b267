package policy

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"unicode/utf8"
)

const (
	// MaxStoredBytes is the most a stored params or result document may
	// take.
	MaxStoredBytes = 10 * 1024

	// MinTruncateBytes is the smallest limit Truncate honours; a smaller
	// limit is raised to it. It leaves room for the truncation marker and a
	// little content.
	MinTruncateBytes = 64
)

const (
	truncatedMember = `"_truncated":true`
	// invalidDocument stands in for input that is not JSON at all.
	invalidDocument = `{"_truncated":true,"_invalid":true}`
	// emptyTruncated is a truncated document from which nothing survived.
	emptyTruncated = `{"_truncated":true}`
	wrapPrefix     = `{"_truncated":true,"value":`
	ellipsis       = "…"
)

// Truncate bounds doc to maxBytes (at least MinTruncateBytes) without ever
// cutting through JSON syntax, so the result is always valid JSON.
//
// A valid doc of at most maxBytes is returned unchanged, and one whose
// compact form fits is returned compacted. Otherwise the document is pruned
// structurally: trailing array elements are dropped, the largest object
// members are dropped first (members that fit are kept whole, in their
// original order), and strings are shortened at a rune boundary with a "…"
// suffix. A pruned top-level object gains "_truncated": true (replacing any
// such member it had); any other top-level value is wrapped as
// {"_truncated": true, "value": <pruned>}, with "value" omitted when nothing
// of it fits. Only the top level carries the marker. Input that is not valid
// JSON becomes {"_truncated":true,"_invalid":true} and empty input becomes
// null.
//
// Sizes are measured once bottom-up and only one child per container is
// pruned, so the cost is linear in the input apart from sorting the members
// of the objects on the pruned path.
func Truncate(doc json.RawMessage, maxBytes int) json.RawMessage {
	limit := max(maxBytes, MinTruncateBytes)
	if isBlank(doc) {
		return jsonNull
	}
	if !json.Valid(doc) {
		return json.RawMessage(invalidDocument)
	}
	if len(doc) <= limit {
		return doc
	}
	if nonSpaceLen(doc) <= limit {
		var compact bytes.Buffer
		if err := json.Compact(&compact, doc); err == nil && compact.Len() <= limit {
			return compact.Bytes()
		}
	}

	v := parseValid(doc)
	out := make([]byte, 0, limit)
	if v.kind == kindObject {
		members := v.members[:0:0]
		for _, m := range v.members {
			if m.key != "_truncated" {
				members = append(members, m)
			}
		}
		v.members = members
		measure(&v)
		// Reserve room for the marker and its comma, then splice the
		// marker in after the opening brace.
		out = append(out, '{')
		out = append(out, truncatedMember...)
		body, ok := fitObject(nil, &v, limit-len(truncatedMember)-1)
		if !ok || len(body) <= 2 {
			return json.RawMessage(emptyTruncated)
		}
		out = append(out, ',')
		out = append(out, body[1:]...)
		return out
	}

	measure(&v)
	out = append(out, wrapPrefix...)
	out, ok := fit(out, &v, limit-len(wrapPrefix)-1)
	if !ok {
		return json.RawMessage(emptyTruncated)
	}
	return append(out, '}')
}

// fit appends an encoding of v of at most budget bytes, pruning as needed.
// It reports false, leaving dst as it was, when nothing of v fits.
func fit(dst []byte, v *value, budget int) ([]byte, bool) {
	if v.size <= budget {
		return appendValue(dst, v), true
	}
	switch v.kind {
	case kindString:
		return fitString(dst, v.str, budget)
	case kindArray:
		return fitArray(dst, v, budget)
	case kindObject:
		return fitObject(dst, v, budget)
	default:
		return dst, false
	}
}

// fitString keeps as many leading runes of s as fit, followed by an
// ellipsis.
func fitString(dst []byte, s string, budget int) ([]byte, bool) {
	avail := budget - 2 - len(ellipsis)
	if avail < 0 {
		return dst, false
	}
	end, used := 0, 0
	for end < len(s) {
		r, width := utf8.DecodeRuneInString(s[end:])
		n := runeSize(r, width)
		if used+n > avail {
			break
		}
		used += n
		end += width
	}
	dst = append(dst, '"')
	dst = appendStringContent(dst, s[:end])
	dst = append(dst, ellipsis...)
	return append(dst, '"'), true
}

// fitArray keeps the leading elements that fit whole, then as much of the
// next element as fits, and drops the rest. A non-empty array pruned down to
// nothing reports false, since an empty [] would misrepresent the data.
func fitArray(dst []byte, v *value, budget int) ([]byte, bool) {
	if budget < 2 {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, '[')
	used := 2
	for i := range v.elems {
		e := &v.elems[i]
		sep := 0
		if i > 0 {
			sep = 1
		}
		if used+sep+e.size <= budget {
			if sep > 0 {
				dst = append(dst, ',')
			}
			dst = appendValue(dst, e)
			used += sep + e.size
			continue
		}
		mark := len(dst)
		if sep > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = fit(dst, e, budget-used-sep); !ok {
			dst = dst[:mark]
		}
		break
	}
	if len(dst) == start+1 && len(v.elems) > 0 {
		return dst[:start], false
	}
	return append(dst, ']'), true
}

// fitObject keeps whole the members that fit when taken smallest first, so
// that one huge member does not push out many small useful ones, prunes the
// smallest remaining member that can be shortened into what is left, and
// drops the rest. Kept members stay in their original order. A non-empty
// object pruned down to nothing reports false, like fitArray.
func fitObject(dst []byte, v *value, budget int) ([]byte, bool) {
	if budget < 2 {
		return dst, false
	}
	n := len(v.members)
	sizes := make([]int, n)
	order := make([]int, n)
	for i := range v.members {
		sizes[i] = stringSize(v.members[i].key) + 1 + v.members[i].val.size
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return sizes[order[a]] < sizes[order[b]] })

	const (
		dropped = iota
		whole
		partial
	)
	state := make([]uint8, n)
	used, count := 2, 0
	partialIdx, partialBudget := -1, 0
	for _, i := range order {
		sep := 0
		if count > 0 {
			sep = 1
		}
		if used+sep+sizes[i] <= budget {
			state[i] = whole
			used += sep + sizes[i]
			count++
			continue
		}
		// Sizes ascend, so nothing after this fits whole; prune the first
		// member that can be shortened into the remaining budget.
		rem := budget - used - sep - stringSize(v.members[i].key) - 1
		if rem >= minPrunedSize(&v.members[i].val) {
			state[i] = partial
			partialIdx, partialBudget = i, rem
			break
		}
	}

	start := len(dst)
	dst = append(dst, '{')
	first := true
	for i := range v.members {
		if state[i] == dropped {
			continue
		}
		m := &v.members[i]
		mark := len(dst)
		if !first {
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.key)
		dst = append(dst, ':')
		if i == partialIdx {
			var ok bool
			if dst, ok = fit(dst, &m.val, partialBudget); !ok {
				dst = dst[:mark]
				continue
			}
		} else {
			dst = appendValue(dst, &m.val)
		}
		first = false
	}
	if first && n > 0 {
		return dst[:start], false
	}
	return append(dst, '}'), true
}

// minPrunedSize is the smallest budget into which fit can squeeze v, or a
// budget no document can have when v is a scalar that cannot be shortened.
func minPrunedSize(v *value) int {
	switch v.kind {
	case kindString:
		return 2 + len(ellipsis)
	case kindArray, kindObject:
		return 2
	default:
		return math.MaxInt
	}
}
