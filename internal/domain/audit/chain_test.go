package audit_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/audit"
)

func TestEncode_RedactsSecretsAndKeepsFlags(t *testing.T) {
	t.Parallel()
	raw, err := audit.Encode(map[string]any{
		"name":           "notes",
		"secret":         "s3cret-1",
		"auth":           map[string]any{"type": "bearer", "api_key": "s3cret-2", "header_name": "X-Key"},
		"headers":        []any{map[string]any{"Authorization": "Bearer s3cret-3"}},
		"password":       nil,
		"secret_changed": true,
		"token_kind":     "oauth",
		"count":          json.Number("12345678901234567890"),
	})
	require.NoError(t, err)
	for _, s := range []string{"s3cret-1", "s3cret-2", "s3cret-3"} {
		require.NotContains(t, string(raw), s)
	}
	require.JSONEq(t, `{"auth":{"api_key":"[redacted]","header_name":"X-Key","type":"bearer"},"count":12345678901234567890,
		"headers":[{"Authorization":"[redacted]"}],"name":"notes","password":null,"secret":"[redacted]","secret_changed":true,"token_kind":"oauth"}`, string(raw))
	require.Contains(t, string(raw), "12345678901234567890", "numbers as written")

	null, err := audit.Encode(nil)
	require.NoError(t, err)
	require.Equal(t, "null", string(null))
}

// chain builds a valid export of n entries.
func chain(t *testing.T, n int) []string {
	t.Helper()
	var lines []string
	prev := ""
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	for i := 1; i <= n; i++ {
		after, err := audit.Encode(map[string]any{"n": i})
		require.NoError(t, err)
		e := audit.Entry{
			OrganizationID: "org-1", Seq: int64(i), OccurredAt: at.Add(time.Duration(i) * time.Second),
			Actor:  audit.Actor{Subject: "alice", Kind: "user", Role: "admin", ClientAddr: "192.0.2.1"},
			Action: "thing.update", TargetType: "thing", TargetID: "t", Before: json.RawMessage("null"), After: after, PrevHash: prev,
		}
		e.Hash = audit.Hash(&e)
		prev = e.Hash
		b, err := json.Marshal(e)
		require.NoError(t, err)
		lines = append(lines, string(b)+"\n")
	}
	return lines
}

func TestVerify(t *testing.T) {
	t.Parallel()
	lines := chain(t, 4)
	n, err := audit.Verify(strings.NewReader(strings.Join(lines, "")))
	require.NoError(t, err)
	require.Equal(t, 4, n)

	// Whitespace and key order within before/after do not matter: the hash
	// covers the canonical JSON.
	spaced := strings.Replace(lines[2], `"after":{"n":3}`, `"after": { "n" : 3 }`, 1)
	require.NotEqual(t, lines[2], spaced)
	_, err = audit.Verify(strings.NewReader(lines[0] + lines[1] + spaced + lines[3]))
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		lines  []string
		line   int
		reason string
	}{
		"Altered":        {[]string{lines[0], strings.Replace(lines[1], `"alice"`, `"mallory"`, 1), lines[2]}, 2, "altered"},
		"AlteredState":   {[]string{lines[0], strings.Replace(lines[1], `{"n":2}`, `{"n":20}`, 1)}, 2, "altered"},
		"Deleted":        {[]string{lines[0], lines[2], lines[3]}, 2, "missing"},
		"Reordered":      {[]string{lines[0], lines[2], lines[1]}, 2, "out of order"},
		"FirstDeleted":   {lines[1:], 1, "not 1"},
		"OtherOrg":       {[]string{lines[0], strings.Replace(lines[1], `"org-1"`, `"org-2"`, 1)}, 2, "organization"},
		"NotJSON":        {[]string{lines[0], "{\n"}, 2, "not an audit entry"},
		"UnknownField":   {[]string{strings.Replace(lines[0], `{"organization_id"`, `{"extra":1,"organization_id"`, 1)}, 1, "not an audit entry"},
		"WrongPrevHash":  {[]string{lines[0], strings.Replace(lines[1], `"prev_hash":"`, `"prev_hash":"0`, 1)}, 2, "prev_hash"},
		"DuplicatedLine": {[]string{lines[0], lines[1], lines[1]}, 3, "seq 2 follows seq 2"},
		// encoding/json takes keys case-insensitively and keeps the last of
		// a repeated one: a line must not show a reader one state and verify
		// another.
		"ShadowedByCase": {[]string{lines[0], strings.Replace(strings.Replace(lines[1], `{"n":2}`, `{"n":20}`, 1), `"hash":`, `"AFTER":{"n":2},"hash":`, 1)}, 2, "not an audit entry"},
		"RepeatedKey":    {[]string{lines[0], strings.Replace(strings.Replace(lines[1], `{"n":2}`, `{"n":20}`, 1), `"hash":`, `"after":{"n":2},"hash":`, 1)}, 2, "not an audit entry"},
		"ActorShadowed":  {[]string{lines[0], strings.Replace(lines[1], `"subject":"alice"`, `"subject":"mallory","Subject":"alice"`, 1)}, 2, "not an audit entry"},
		"RepeatedInside": {[]string{lines[0], strings.Replace(lines[1], `{"n":2}`, `{"n":20,"n":2}`, 1)}, 2, "not an audit entry"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := audit.Verify(strings.NewReader(strings.Join(tc.lines, "")))
			var ve *audit.VerifyError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, tc.line, ve.Line, ve.Error())
			require.Contains(t, ve.Reason, tc.reason)
		})
	}

	_, err = audit.Verify(bytes.NewReader(nil))
	require.ErrorContains(t, err, "no entries")
}

// TestVerifyExport_Anchor: an export cut at its front verifies from an
// anchor naming the first kept entry's seq and prev_hash, and only then.
func TestVerifyExport_Anchor(t *testing.T) {
	t.Parallel()
	lines := chain(t, 5)
	var third audit.Entry
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &third))
	anchor := func(first int64, prev string) string {
		b, err := json.Marshal(audit.AnchorLine{Anchor: &audit.Anchor{OrganizationID: "org-1", FirstSeq: first, PrevHash: prev, PrunedTotal: first - 1}})
		require.NoError(t, err)
		return string(b) + "\n"
	}
	v, err := audit.VerifyExport(strings.NewReader(anchor(3, third.PrevHash) + strings.Join(lines[2:], "")))
	require.NoError(t, err)
	require.Equal(t, 3, v.Entries)
	require.EqualValues(t, 3, v.FirstSeq)
	require.EqualValues(t, 5, v.LastSeq)
	require.NotNil(t, v.Anchor)

	for name, tc := range map[string]struct {
		text, reason string
	}{
		"WrongPrevHash": {anchor(3, "beef") + strings.Join(lines[2:], ""), "anchor's prev_hash"},
		"WrongSeq":      {anchor(2, third.PrevHash) + strings.Join(lines[2:], ""), "not at its anchor's first_seq 2"},
		"FirstSeqOne":   {anchor(1, "x") + strings.Join(lines, ""), "first_seq above 1"},
		"AnchorLater":   {lines[0] + anchor(2, "x"), "not an audit entry"},
		"OtherOrg":      {strings.Replace(anchor(3, third.PrevHash), "org-1", "org-2", 1) + strings.Join(lines[2:], ""), "organization"},
		"KeptAltered":   {anchor(3, third.PrevHash) + lines[2] + strings.Replace(lines[3], `"alice"`, `"mallory"`, 1), "altered"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := audit.VerifyExport(strings.NewReader(tc.text))
			require.ErrorContains(t, err, tc.reason)
		})
	}
}
