package api

import (
	"net/http"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/settings"
)

func (s *Server) getQuietHours(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	windows, err := s.settings.GetQuietHours(r.Context(), c.Org)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"windows": windows})
	return nil
}

func (s *Server) putQuietHours(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var body struct {
		Windows []settings.QuietHoursWindow `json:"windows"`
	}
	if err := decode(r, &body, false); err != nil {
		return err
	}
	windows, err := s.settings.PutQuietHours(r.Context(), c.Org, c.Subject, body.Windows)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"windows": windows})
	return nil
}

func (s *Server) getDoNotContact(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	patterns, err := s.settings.GetDoNotContact(r.Context(), c.Org)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"patterns": patterns})
	return nil
}

func (s *Server) putDoNotContact(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var body struct {
		Patterns []string `json:"patterns"`
	}
	if err := decode(r, &body, false); err != nil {
		return err
	}
	patterns, err := s.settings.PutDoNotContact(r.Context(), c.Org, c.Subject, body.Patterns)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"patterns": patterns})
	return nil
}

func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	invs, total, err := s.admin.ListDeadLetters(r.Context(), c.Org, page)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"dead_letters": viewInvocations(invs), "total": total})
	return nil
}

type idsBody struct {
	IDs []string `json:"ids"`
}

func (s *Server) deadLetterOp(retry bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
		var body idsBody
		if id := r.PathValue("id"); id != "" {
			body.IDs = []string{id}
		} else if err := decode(r, &body, false); err != nil {
			return err
		}
		op := s.admin.DiscardDeadLetters
		if retry {
			op = s.admin.RetryDeadLetters
		}
		results, err := op(r.Context(), c.Org, c.Subject, body.IDs)
		if err != nil {
			return err
		}
		if r.PathValue("id") != "" && results[0].Status != "retried" && results[0].Status != "discarded" {
			status := http.StatusConflict
			if results[0].Status == "not_found" {
				status = http.StatusNotFound
			}
			return &apiError{status: status, code: results[0].Status, message: results[0].Error}
		}
		writeJSON(w, http.StatusOK, map[string]any{"results": results})
		return nil
	}
}

// queue answers the caller's organization's own queue: its pause and its
// unfinished invocations by state. River's queues, shared by every
// organization, are not served: they are the operator's (`outboxd queue`).
func (s *Server) queue(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	q, err := s.admin.Queue(r.Context(), c.Org)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, q)
	return nil
}

// pause pauses (resume resumes) the caller's organization's actions, and
// only its own: the workers hold its jobs while every other
// organization's keep running.
func (s *Server) pause(resume bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
		op := s.admin.Pause
		if resume {
			op = s.admin.Resume
		}
		q, err := op(r.Context(), c.Org, c.Subject)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, q)
		return nil
	}
}

// stats answers the operations page's summary of the caller's
// organization: its queue (as GET /v1/queues), and its throughput and
// failure rate over the last hour, computed by the database.
func (s *Server) stats(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	st, err := s.admin.Stats(r.Context(), c.Org)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// rateBuckets answers the configured rate buckets with their current fill
// and leases.
func (s *Server) rateBuckets(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	buckets, err := s.admin.RateBuckets(r.Context(), c.Org)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"buckets": buckets})
	return nil
}
