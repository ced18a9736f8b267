package api

import (
	"net/http"
	"time"

	adm "github.com/outboxd/outboxd/internal/domain/admin"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/settings"
)

// QuietHoursWindow is the API shape of a quiet window, in answers and
// request bodies; it converts from and to settings.QuietHoursWindow, so
// the two keep the same fields. Its name shows in decoding errors ("Go
// struct field QuietHoursWindow.windows.bucket").
type QuietHoursWindow struct {
	Bucket   string `json:"bucket"`
	TimeZone string `json:"time_zone"`
	Start    string `json:"start"`
	End      string `json:"end"`
}

func viewQuietHours(windows []settings.QuietHoursWindow) []QuietHoursWindow {
	return viewEach(windows, func(w settings.QuietHoursWindow) QuietHoursWindow { return QuietHoursWindow(w) })
}

func (s *Server) getQuietHours(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	windows, err := s.settings.GetQuietHours(r.Context(), c.Org)
	if err != nil {
		return err
	}
	setETag(w, settings.ETag(windows))
	writeJSON(w, http.StatusOK, map[string]any{"windows": viewQuietHours(windows)})
	return nil
}

func (s *Server) putQuietHours(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var body struct {
		Windows []QuietHoursWindow `json:"windows"`
	}
	if err := decode(r, &body, false); err != nil {
		return err
	}
	in := viewEach(body.Windows, func(w QuietHoursWindow) settings.QuietHoursWindow { return settings.QuietHoursWindow(w) })
	windows, err := s.settings.PutQuietHours(r.Context(), c.Org, c.Subject, in, r.Header.Get("If-Match"))
	if err != nil {
		return err
	}
	setETag(w, settings.ETag(windows))
	writeJSON(w, http.StatusOK, map[string]any{"windows": viewQuietHours(windows)})
	return nil
}

func (s *Server) getDoNotContact(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	patterns, err := s.settings.GetDoNotContact(r.Context(), c.Org)
	if err != nil {
		return err
	}
	setETag(w, settings.ETag(patterns))
	writeJSON(w, http.StatusOK, map[string]any{"patterns": patterns})
	return nil
}

// maxDoNotContact bounds an organization's do-not-contact patterns: every
// job of the organization reads them all, and every job with a recipient
// matches its recipient against each.
const maxDoNotContact = 10000

func (s *Server) putDoNotContact(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var body struct {
		Patterns []string `json:"patterns"`
	}
	if err := decode(r, &body, false); err != nil {
		return err
	}
	if len(body.Patterns) > maxDoNotContact {
		return invalidField("patterns", "patterns holds %d entries; at most %d are allowed", len(body.Patterns), maxDoNotContact)
	}
	patterns, err := s.settings.PutDoNotContact(r.Context(), c.Org, c.Subject, body.Patterns, r.Header.Get("If-Match"))
	if err != nil {
		return err
	}
	setETag(w, settings.ETag(patterns))
	writeJSON(w, http.StatusOK, map[string]any{"patterns": patterns})
	return nil
}

// listDeadLetters lists the organization's dead letters of the sources the
// token's sources claim allows, filtered in the query so that a page is
// full and the total counts what the token sees.
func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	invs, total, err := s.admin.ListDeadLetters(r.Context(), c.Org, c.Sources, page)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"dead_letters": viewInvocations(invs), "total": total})
	return nil
}

type idsBody struct {
	IDs []string `json:"ids"`
}

// deadLetterOp retries or discards dead letters by id; one of a source the
// token's sources claim does not allow is not_found, as an unknown id is,
// and is left as it is.
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
		results, err := op(r.Context(), c.Org, c.Subject, body.IDs, c.Sources)
		if err != nil {
			return err
		}
		views := viewEach(results, func(b adm.BatchResult) batchResultView { return batchResultView(b) })
		if done := doneIDs(results); len(done) > 0 {
			action := "dead_letter.discard"
			if retry {
				action = "dead_letter.retry"
			}
			s.record(r, &audit.Change{Action: action, TargetType: "dead_letters", TargetID: r.PathValue("id"),
				After: map[string]any{"ids": done, "results": views}, Sources: doneSources(results)})
		}
		if r.PathValue("id") != "" && results[0].Status != "retried" && results[0].Status != "discarded" {
			status := http.StatusConflict
			if results[0].Status == "not_found" {
				status = http.StatusNotFound
			}
			return &apiError{status: status, code: results[0].Status, message: results[0].Error}
		}
		writeJSON(w, http.StatusOK, map[string]any{"results": views})
		return nil
	}
}

// doneSources are the sources of the dead letters a batch retried or
// discarded.
func doneSources(results []adm.BatchResult) []string {
	var out []string
	for _, b := range results {
		if b.Source != "" {
			out = append(out, b.Source)
		}
	}
	return out
}

// doneIDs are the ids of the dead letters a batch retried or discarded.
func doneIDs(results []adm.BatchResult) []string {
	var out []string
	for _, b := range results {
		if b.Status == "retried" || b.Status == "discarded" {
			out = append(out, b.ID)
		}
	}
	return out
}

// queue answers the caller's organization's own queue: its pause and its
// unfinished invocations by state. River's queues, shared by every
// organization, are not served: they are the operator's (`outboxd queue`).
func (s *Server) queue(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	q, err := s.admin.Queue(r.Context(), c.Org)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewOrgQueue(q))
	return nil
}

// pause pauses (resume resumes) the caller's organization's actions, and
// only its own: the workers hold its jobs while every other
// organization's keep running.
func (s *Server) pause(resume bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
		op, action := s.admin.Pause, "organization.pause"
		if resume {
			op, action = s.admin.Resume, "organization.resume"
		}
		var before *pauseView
		if s.audit != nil {
			q, err := s.admin.Queue(r.Context(), c.Org)
			if err != nil {
				return err
			}
			before = &pauseView{Paused: q.Paused, PausedAt: q.PausedAt, PausedBy: q.PausedBy}
		}
		q, err := op(r.Context(), c.Org, c.Subject)
		if err != nil {
			return err
		}
		s.record(r, &audit.Change{Action: action, TargetType: "organization", TargetID: c.Org,
			Before: before, After: pauseView{Paused: q.Paused, PausedAt: q.PausedAt, PausedBy: q.PausedBy}})
		writeJSON(w, http.StatusOK, viewOrgQueue(q))
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
	writeJSON(w, http.StatusOK, viewStats(st))
	return nil
}

// rateBuckets answers the configured rate buckets with their current fill
// and leases.
func (s *Server) rateBuckets(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	buckets, err := s.admin.RateBuckets(r.Context(), c.Org)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"buckets": viewEach(buckets, viewRateBucket)})
	return nil
}

// batchResultView is the API shape of one id's outcome in a dead-letter
// batch; it converts from admin.BatchResult, so the two keep the same
// fields.
type batchResultView struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// Source is not shown: the audit entry's sources (doneSources).
	Source string `json:"-"`
}

// orgQueueView is the API shape of an organization's queue (admin.OrgQueue).
type orgQueueView struct {
	Paused   bool                      `json:"paused"`
	PausedAt *time.Time                `json:"paused_at"`
	PausedBy *string                   `json:"paused_by"`
	States   map[string]stateStatsView `json:"states"`
}

// stateStatsView converts from admin.StateStats, so the two keep the same
// fields.
type stateStatsView struct {
	Count      int64      `json:"count"`
	OldestAt   *time.Time `json:"oldest_at"`
	AgeSeconds *float64   `json:"age_seconds"`
}

// viewOrgQueue returns the view of q; nil stays nil, which JSON shows as
// null.
func viewOrgQueue(q *adm.OrgQueue) *orgQueueView {
	if q == nil {
		return nil
	}
	return &orgQueueView{
		Paused: q.Paused, PausedAt: q.PausedAt, PausedBy: q.PausedBy,
		States: viewEachValue(q.States, func(st adm.StateStats) stateStatsView { return stateStatsView(st) }),
	}
}

// statsView is the API shape of the operations page's summary
// (admin.Stats).
type statsView struct {
	GeneratedAt time.Time                    `json:"generated_at"`
	Queue       *orgQueueView                `json:"queue"`
	InFlight    map[string]inFlightStatsView `json:"in_flight"`
	LastHour    outcomeStatsView             `json:"last_hour"`
	Retention   []retentionStatsView         `json:"retention"`
}

// retentionStatsView is the API shape of admin.RetentionStats.
type retentionStatsView struct {
	Table        string     `json:"table"`
	KeepSeconds  *float64   `json:"keep_seconds"`
	LastRunAt    *time.Time `json:"last_run_at"`
	LastDeleted  int64      `json:"last_deleted"`
	DeletedTotal int64      `json:"deleted_total"`
}

func viewRetentionStats(r adm.RetentionStats) retentionStatsView {
	v := retentionStatsView{Table: r.Table, LastRunAt: r.LastRunAt, LastDeleted: r.LastDeleted, DeletedTotal: r.DeletedTotal}
	if r.Keep > 0 {
		keep := r.Keep.Seconds()
		v.KeepSeconds = &keep
	}
	return v
}

// inFlightStatsView converts from admin.InFlightStats, so the two keep
// the same fields.
type inFlightStatsView struct {
	Count    int64     `json:"count"`
	OldestAt time.Time `json:"oldest_at"`
}

type outcomeStatsView struct {
	Since               time.Time           `json:"since"`
	WindowSeconds       int                 `json:"window_seconds"`
	Ended               map[string]int64    `json:"ended"`
	ThroughputPerMinute float64             `json:"throughput_per_minute"`
	FailureRate         *float64            `json:"failure_rate"`
	Buckets             []outcomeBucketView `json:"buckets"`
}

// outcomeBucketView converts from admin.OutcomeBucket, so the two keep the
// same fields.
type outcomeBucketView struct {
	Start     time.Time `json:"start"`
	Completed int64     `json:"completed"`
	Failed    int64     `json:"failed"`
	Other     int64     `json:"other"`
}

// viewStats returns the view of st; nil stays nil, which JSON shows as
// null.
func viewStats(st *adm.Stats) *statsView {
	if st == nil {
		return nil
	}
	o := st.LastHour
	return &statsView{
		GeneratedAt: st.GeneratedAt, Queue: viewOrgQueue(st.Queue),
		InFlight: viewEachValue(st.InFlight, func(f adm.InFlightStats) inFlightStatsView { return inFlightStatsView(f) }),
		LastHour: outcomeStatsView{
			Since: o.Since, WindowSeconds: o.WindowSeconds, Ended: o.Ended,
			ThroughputPerMinute: o.ThroughputPerMinute, FailureRate: o.FailureRate,
			Buckets: viewEach(o.Buckets, func(b adm.OutcomeBucket) outcomeBucketView { return outcomeBucketView(b) }),
		},
		Retention: viewEach(st.Retention, viewRetentionStats),
	}
}

// rateBucketView is the API shape of a rate bucket with its rows' state
// (admin.RateBucket).
type rateBucketView struct {
	Name            string                `json:"name"`
	Scope           string                `json:"scope"`
	Rate            int                   `json:"rate"`
	IntervalSeconds float64               `json:"interval_seconds"`
	Burst           int                   `json:"burst"`
	MaxConcurrency  int                   `json:"max_concurrency"`
	States          []rateBucketStateView `json:"states"`
}

// rateBucketStateView converts from admin.RateBucketState, so the two
// keep the same fields.
type rateBucketStateView struct {
	Source       string     `json:"source,omitempty"`
	Tokens       float64    `json:"tokens"`
	BlockedUntil *time.Time `json:"blocked_until"`
	Leases       int        `json:"leases"`
}

func viewRateBucket(b adm.RateBucket) rateBucketView {
	return rateBucketView{
		Name: b.Name, Scope: b.Scope, Rate: b.Rate, IntervalSeconds: b.IntervalSeconds, Burst: b.Burst, MaxConcurrency: b.MaxConcurrency,
		States: viewEach(b.States, func(st adm.RateBucketState) rateBucketStateView { return rateBucketStateView(st) }),
	}
}

// pauseView is an organization's pause, as the audit trail shows it.
type pauseView struct {
	Paused   bool       `json:"paused"`
	PausedAt *time.Time `json:"paused_at"`
	PausedBy *string    `json:"paused_by"`
}
