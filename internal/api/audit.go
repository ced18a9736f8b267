package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/platform/httpserver"
)

// actor is who c is, and from where r came, for the audit trail.
func (s *Server) actor(r *http.Request, c *auth.Claims) audit.Actor {
	return audit.Actor{
		Subject: c.Subject, Kind: string(c.Kind), Role: string(c.Role),
		ClientAddr: httpserver.ClientAddr(r, s.trustForwardedFor),
	}
}

// record records a change that succeeded and whose service does not record
// it itself, in the caller's organization. The change stands whatever
// happens here: a failure to record is logged at error level. It runs even
// when the client has gone.
func (s *Server) record(r *http.Request, c *audit.Change) {
	if s.audit == nil {
		return
	}
	claims, _ := r.Context().Value(claimsKey{}).(*auth.Claims)
	if claims == nil {
		return
	}
	c.Org = claims.Org
	if err := s.audit.Record(context.WithoutCancel(r.Context()), c); err != nil {
		s.logger.ErrorContext(r.Context(), "recording an audit entry", "organization_id", c.Org, "action", c.Action, "target_id", c.TargetID, "error", err)
	}
}

// setETag answers a setting's entity tag, which a replacement may name in
// If-Match.
func setETag(w http.ResponseWriter, etag string) {
	w.Header().Set("ETag", etag)
}

// auditExportSpansSources is why a token with a sources claim exports no
// audit trail: the export is the organization's whole chain, every
// source's entries with those of the organization, which is what verifies
// (outboxd audit verify). Its listing shows it the entries of its sources.
const auditExportSpansSources = "the audit export is the whole chain, of every source; GET /v1/audit lists the entries of the token's sources"

// listAudit answers a page of the trail. Its entries are in the shape of
// the export (audit.Entry, the fields its hash covers) rather than a view
// of the HTTP layer's: the same object is listed, exported and verified.
// A token with a sources claim lists only the entries that name a source
// and none outside its claim (audit.Filter's Sources): an entry of the
// whole organization (tokens, settings, webhooks, ...) names none. Its
// pages are those of the trail's order; an entry's hash is still that of
// its fields and prev_hash, the hash of the entry before it in the whole
// chain, which may be one it does not list.
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if s.audit == nil {
		return &apiError{status: http.StatusNotFound, code: "not_found", message: "the audit trail is not served"}
	}
	q := r.URL.Query()
	f := audit.Filter{Actor: q.Get("actor"), Action: q.Get("action"), TargetType: q.Get("target_type"), TargetID: q.Get("target_id"),
		Sources: c.Sources.Filter()}
	for name, dst := range map[string]**time.Time{"since": &f.Since, "until": &f.Until} {
		raw := q.Get(name)
		if raw == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, raw)
		if err != nil {
			return invalidField(name, "%s must be a time in RFC 3339 (2026-01-31T12:00:00Z)", name)
		}
		*dst = &t
	}
	if raw := q.Get("cursor"); raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n <= 0 {
			return invalidField("cursor", "cursor must be the next_cursor of a previous page")
		}
		f.BeforeSeq = n
	}
	if raw := q.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > audit.MaxLimit {
			return invalidField("limit", "limit must be an integer between 1 and %d", audit.MaxLimit)
		}
		f.Limit = n
	}
	entries, next, err := s.audit.List(r.Context(), c.Org, &f)
	if err != nil {
		return err
	}
	var cursor *string
	if next > 0 {
		n := strconv.FormatInt(next, 10)
		cursor = &n
	}
	if entries == nil {
		entries = []audit.Entry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries, "next_cursor": cursor})
	return nil
}

// exportWriteTimeout bounds the writing of one batch of an export.
const exportWriteTimeout = time.Minute

// exportAudit streams the organization's whole trail as JSON lines, oldest
// first, after its anchor's line when retention deleted its oldest
// entries: what `outboxd audit verify` checks. A failure once the answer has
// begun breaks the connection, so that a cut export is an error at the
// client rather than a shorter trail that verifies. A token with a
// sources claim is refused (auditExportSpansSources).
func (s *Server) exportAudit(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := unnarrowed(c, auditExportSpansSources); err != nil {
		return err
	}
	if s.audit == nil {
		return &apiError{status: http.StatusNotFound, code: "not_found", message: "the audit trail is not served"}
	}
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	started := false
	start := func() {
		if !started {
			started = true
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.Header().Set("Content-Disposition", `attachment; filename="audit.jsonl"`)
			w.WriteHeader(http.StatusOK)
		}
		_ = rc.SetWriteDeadline(time.Now().Add(exportWriteTimeout))
	}
	err := s.audit.Export(r.Context(), c.Org, func(a *audit.Anchor) error {
		start()
		return enc.Encode(audit.AnchorLine{Anchor: a})
	}, func(e *audit.Entry) error {
		start()
		return enc.Encode(e)
	})
	switch {
	case err != nil && started:
		s.logger.ErrorContext(r.Context(), "exporting the audit trail", "organization_id", c.Org, "error", err)
		panic(http.ErrAbortHandler)
	case err != nil:
		return err
	case !started:
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
	}
	return nil
}
