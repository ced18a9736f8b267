package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
)

// Redacted replaces the value of a key that names a secret.
const Redacted = "[redacted]"

// secretWords are the parts of a key whose value Redact replaces.
var secretWords = []string{"secret", "token", "password", "passwd", "api_key", "apikey", "authorization", "private_key", "credential_value"}

// secretKey reports whether key names a secret. Flags about a secret
// ("secret_changed", "token_replaced") and a token's kind are kept: they
// say that it changed or what it is, not what it is worth.
func secretKey(key string) bool {
	k := strings.ToLower(key)
	if strings.HasSuffix(k, "_changed") || strings.HasSuffix(k, "_replaced") || k == "token_kind" {
		return false
	}
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// Encode returns v as canonical JSON with every value under a key that
// names a secret replaced by Redacted; nil is JSON null.
func Encode(v any) (json.RawMessage, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	return json.Marshal(redact(tree))
}

func redact(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if secretKey(k) && x != nil {
				v[k] = Redacted
				continue
			}
			v[k] = redact(x)
		}
	case []any:
		for i, x := range v {
			v[i] = redact(x)
		}
	}
	return v
}

// canonicalJSON re-encodes raw JSON canonically: object keys sorted, no
// insignificant space, numbers as written.
func canonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("null"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	return json.Marshal(tree)
}

// hashVersion opens every canonical encoding, so that a later encoding can
// be told apart.
const hashVersion = "outboxd.audit.v1"

// Canonical is the encoding an entry's hash covers: a JSON array of every
// field but the hash, in a fixed order, with before and after in
// canonical JSON and the time in RFC 3339 with nanoseconds, UTC.
func Canonical(e *Entry) ([]byte, error) {
	before, err := canonicalJSON(e.Before)
	if err != nil {
		return nil, fmt.Errorf("before: %w", err)
	}
	after, err := canonicalJSON(e.After)
	if err != nil {
		return nil, fmt.Errorf("after: %w", err)
	}
	return json.Marshal([]any{
		hashVersion, e.OrganizationID, e.Seq, e.OccurredAt.UTC().Format(time.RFC3339Nano),
		e.Actor.Subject, e.Actor.Kind, e.Actor.Role, e.Actor.ClientAddr,
		e.Action, e.TargetType, e.TargetID, before, after, e.PrevHash,
	})
}

// Hash is the hex SHA-256 of e's canonical encoding; "" when e's before
// or after is not JSON (which Verify reports).
func Hash(e *Entry) string {
	b, err := Canonical(e)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// VerifyError is the first broken entry of an export and why.
type VerifyError struct {
	// Line is the export's line, from 1.
	Line int
	// Seq is the entry's seq, when the line parsed.
	Seq    int64
	Reason string
}

func (e *VerifyError) Error() string {
	if e.Seq > 0 {
		return fmt.Sprintf("line %d (seq %d): %s", e.Line, e.Seq, e.Reason)
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
}

// maxLineBytes bounds one exported entry.
const maxLineBytes = 16 << 20

// Verified is what VerifyExport checked.
type Verified struct {
	// Entries is how many entries it checked.
	Entries int
	// FirstSeq and LastSeq are the first and the last entry's seq, and
	// LastHash the last's hash: compare it with the newest entry of the
	// API, as entries cut from the end are not detectable from the file.
	FirstSeq, LastSeq int64
	LastHash          string
	// Anchor is the export's anchor, nil when it starts at seq 1. The
	// chain is checked from it; the anchor itself (the hash it names)
	// cannot be checked from the file alone.
	Anchor *Anchor
}

// Verify is VerifyExport answering only how many entries it checked.
func Verify(r io.Reader) (int, error) {
	v, err := VerifyExport(r)
	return v.Entries, err
}

// VerifyExport checks an export (JSON lines, oldest first, one
// organization's whole chain, or its part after an anchor): every line
// parses; the organization is the same throughout; seq counts from 1, or
// from the anchor's first_seq, without gaps; each prev_hash is the
// previous entry's hash ("" for seq 1, the anchor's prev_hash for its
// first_seq); each hash is recomputed. It returns what it checked, and a
// *VerifyError for the first broken entry.
func VerifyExport(r io.Reader) (*Verified, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	var (
		v       = &Verified{}
		line    int
		org     string
		prev    string
		seq     int64
		started bool // an anchor or an entry was read
	)
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if !started && isAnchorLine(text) {
			started = true
			var al AnchorLine
			if err := exactKeys(text, anchorLineFields); err != nil {
				return v, &VerifyError{Line: line, Reason: fmt.Sprintf("not an audit anchor: %v", err)}
			}
			dec := json.NewDecoder(bytes.NewReader(text))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&al); err != nil || al.Anchor == nil {
				return v, &VerifyError{Line: line, Reason: fmt.Sprintf("not an audit anchor: %v", err)}
			}
			a := al.Anchor
			if a.OrganizationID == "" || a.FirstSeq < 2 || a.PrevHash == "" {
				return v, &VerifyError{Line: line, Reason: "the anchor needs an organization_id, a first_seq above 1 and a prev_hash"}
			}
			v.Anchor, org, seq, prev = a, a.OrganizationID, a.FirstSeq-1, a.PrevHash
			continue
		}
		started = true
		if err := exactKeys(text, entryFields); err != nil {
			return v, &VerifyError{Line: line, Reason: "not an audit entry: " + err.Error()}
		}
		var e Entry
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return v, &VerifyError{Line: line, Reason: "not an audit entry: " + err.Error()}
		}
		fail := func(format string, args ...any) error {
			return &VerifyError{Line: line, Seq: e.Seq, Reason: fmt.Sprintf(format, args...)}
		}
		switch {
		case org == "" && e.OrganizationID == "":
			return v, fail("no organization_id")
		case org == "":
			org = e.OrganizationID
		case e.OrganizationID != org:
			return v, fail("organization %q in an export of %q", e.OrganizationID, org)
		}
		if e.Seq != seq+1 {
			switch {
			case seq == 0:
				return v, fail("the export starts at seq %d, not 1, and has no anchor: entries before it are missing", e.Seq)
			case v.Entries == 0:
				return v, fail("the export starts at seq %d, not at its anchor's first_seq %d: entries are missing", e.Seq, seq+1)
			}
			return v, fail("seq %d follows seq %d: entries are missing or out of order", e.Seq, seq)
		}
		if e.PrevHash != prev {
			if v.Entries == 0 && v.Anchor != nil {
				return v, fail("prev_hash %q is not the anchor's prev_hash %q", e.PrevHash, prev)
			}
			return v, fail("prev_hash %q is not the previous entry's hash %q", e.PrevHash, prev)
		}
		if _, err := Canonical(&e); err != nil {
			return v, fail("not canonical JSON: %v", err)
		}
		if got := Hash(&e); got != e.Hash {
			return v, fail("hash %q does not match the entry's fields (recomputed %q): the entry was altered", e.Hash, got)
		}
		if v.Entries == 0 {
			v.FirstSeq = e.Seq
		}
		v.Entries++
		v.LastSeq, v.LastHash = e.Seq, e.Hash
		seq, prev = e.Seq, e.Hash
	}
	if err := sc.Err(); err != nil {
		return v, &VerifyError{Line: line + 1, Reason: "reading: " + err.Error()}
	}
	if v.Entries == 0 {
		return v, errors.New("the export holds no entries")
	}
	return v, nil
}

// isAnchorLine reports whether a line is a JSON object with an "anchor".
func isAnchorLine(text []byte) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(text, &probe) != nil {
		return false
	}
	_, ok := probe["anchor"]
	return ok
}

// fields are the keys an exported object may have, each with the fields of
// the object under it (nil: any keys).
type fields map[string]fields

// jsonFields are the JSON names of v's fields, each taking any value.
func jsonFields(v any) fields {
	out := fields{}
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out[name] = nil
	}
	return out
}

var (
	entryFields      = jsonFields(Entry{})
	anchorLineFields = fields{"anchor": jsonFields(Anchor{})}
)

func init() { entryFields["actor"] = jsonFields(Actor{}) }

// exactKeys checks a line before encoding/json decodes it, which matches
// keys case-insensitively and keeps the last of a repeated key, so that a
// line cannot show a reader one value and verify another: no object in it
// repeats a key, and the keys of the line's object (and of those nested
// in known) are exactly known's.
func exactKeys(text []byte, known fields) error {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	return walkKeys(dec, known)
}

func walkKeys(dec *json.Decoder, known fields) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	switch t {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := t.(string)
			if seen[key] {
				return fmt.Errorf("key %q repeated", key)
			}
			seen[key] = true
			nested, ok := known[key]
			if known != nil && !ok {
				return fmt.Errorf("unknown field %q", key)
			}
			if err := walkKeys(dec, nested); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for dec.More() {
			if err := walkKeys(dec, nil); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	_, err = dec.Token() // the closing } or ]
	return err
}
