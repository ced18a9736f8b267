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

// Verify checks an export (JSON lines, oldest first, one organization's
// whole chain): every line parses; the organization is the same
// throughout; seq counts from 1 without gaps; each prev_hash is the
// previous entry's hash ("" for the first); each hash is recomputed. It
// returns how many entries it checked, and a *VerifyError for the first
// broken one.
func Verify(r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	var (
		n, line int
		org     string
		prev    string
		seq     int64
	)
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var e Entry
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return n, &VerifyError{Line: line, Reason: "not an audit entry: " + err.Error()}
		}
		fail := func(format string, args ...any) error {
			return &VerifyError{Line: line, Seq: e.Seq, Reason: fmt.Sprintf(format, args...)}
		}
		switch {
		case n == 0 && e.OrganizationID == "":
			return n, fail("no organization_id")
		case n == 0:
			org = e.OrganizationID
		case e.OrganizationID != org:
			return n, fail("organization %q in an export of %q", e.OrganizationID, org)
		}
		if e.Seq != seq+1 {
			if seq == 0 {
				return n, fail("the export starts at seq %d, not 1: entries before it are missing", e.Seq)
			}
			return n, fail("seq %d follows seq %d: entries are missing or out of order", e.Seq, seq)
		}
		if e.PrevHash != prev {
			return n, fail("prev_hash %q is not the previous entry's hash %q", e.PrevHash, prev)
		}
		if _, err := Canonical(&e); err != nil {
			return n, fail("not canonical JSON: %v", err)
		}
		if got := Hash(&e); got != e.Hash {
			return n, fail("hash %q does not match the entry's fields (recomputed %q): the entry was altered", e.Hash, got)
		}
		n++
		seq, prev = e.Seq, e.Hash
	}
	if err := sc.Err(); err != nil {
		return n, &VerifyError{Line: line + 1, Reason: "reading: " + err.Error()}
	}
	if n == 0 {
		return 0, errors.New("the export holds no entries")
	}
	return n, nil
}
