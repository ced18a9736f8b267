package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/outboxd/outboxd/internal/domain/fairness"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/relay"
	"github.com/outboxd/outboxd/internal/domain/relay/webhook/webhookstore"
	"github.com/outboxd/outboxd/internal/platform/netguard"
	"github.com/outboxd/outboxd/internal/platform/tracing"
)

// Queue is the queue deliveries run on, apart from the actions.
const Queue = "webhooks"

// Consumer is the relay consumer of webhooks: the notices of the
// organizations with an enabled endpoint become a delivery row and its job
// for every enabled endpoint that wants them.
func (s *Service) Consumer() relay.Consumer {
	return relay.Consumer{Name: "webhook", Every: s.cfg.RelayInterval, Queue: Queue, Scope: s.scope, Jobs: s.jobs}
}

// scope is the organizations with an enabled endpoint.
func (s *Service) scope(ctx context.Context, tx pgx.Tx) (invocation.FeedScope, error) {
	endpoints, err := s.work.Subscriptions(ctx, tx)
	if err != nil {
		return invocation.FeedScope{}, fmt.Errorf("loading endpoints: %w", err)
	}
	var scope invocation.FeedScope
	for _, ep := range endpoints {
		if !slices.Contains(scope.Orgs, ep.OrganizationID) {
			scope.Orgs = append(scope.Orgs, ep.OrganizationID)
		}
	}
	return scope, nil
}

// jobs inserts the deliveries the notices make and returns their jobs.
func (s *Service) jobs(ctx context.Context, tx pgx.Tx, items []invocation.FeedItem) ([]river.InsertManyParams, error) {
	endpoints, err := s.work.Subscriptions(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("loading endpoints: %w", err)
	}
	var jobs []river.InsertManyParams
	now := time.Now()
	for i := range items {
		it := &items[i]
		var payload []byte
		for j := range endpoints {
			ep := &endpoints[j]
			if ep.OrganizationID != it.Invocation.OrganizationID || !slices.Contains(ep.Events, it.Notice) {
				continue
			}
			if payload == nil {
				payload, err = json.Marshal(map[string]any{"type": it.Notice, "timestamp": it.CreatedAt.UTC(), "data": s.deps.Payload(it)})
				if err != nil {
					return nil, fmt.Errorf("encoding payload: %w", err)
				}
			}
			id, inserted, err := s.work.InsertDelivery(ctx, tx, ep, it, payload)
			if err != nil {
				return nil, fmt.Errorf("inserting delivery: %w", err)
			}
			if !inserted {
				continue
			}
			// Each delivery's job joins its invocation's trace, if traced.
			opts := &river.InsertOpts{MaxAttempts: s.cfg.MaxAttempts, Metadata: tracing.JobMetadata(it.Invocation.TraceContext)}
			if behind, _ := s.deps.Fair.Behind(ep.OrganizationID, now); behind {
				opts.Priority = fairness.PriorityBehind
			}
			jobs = append(jobs, river.InsertManyParams{Args: DeliverArgs{DeliveryID: id}, InsertOpts: opts})
		}
	}
	return jobs, nil
}

// DeliverArgs sends one delivery.
type DeliverArgs struct {
	DeliveryID uuid.UUID `json:"delivery_id"`
}

// Kind implements river.JobArgs.
func (DeliverArgs) Kind() string { return "webhook_deliver" }

// InsertOpts puts deliveries on their queue.
func (DeliverArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: Queue} }

// DeliverWorker runs DeliverArgs: one signed POST per attempt.
type DeliverWorker struct {
	river.WorkerDefaults[DeliverArgs]
	svc *Service
}

// Timeout bounds an attempt: the request plus bookkeeping.
func (w *DeliverWorker) Timeout(*river.Job[DeliverArgs]) time.Duration {
	return w.svc.cfg.Timeout + 5*time.Second
}

// NextRetry is exponential backoff with ±20% jitter, the same value the
// attempt recorded as the delivery's next_attempt_at.
func (w *DeliverWorker) NextRetry(job *river.Job[DeliverArgs]) time.Time {
	return time.Now().Add(w.svc.backoff(job.ID, job.Attempt))
}

// backoff is deterministic per job and attempt, so the delay recorded and
// the delay River applies agree.
func (s *Service) backoff(jobID int64, attempt int) time.Duration {
	d := s.cfg.RetryBaseDelay
	for i := 1; i < attempt && d < s.cfg.RetryMaxDelay; i++ {
		d *= 2
	}
	d = min(d, s.cfg.RetryMaxDelay)
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d", jobID, attempt)
	frac := float64(h.Sum64()%1000) / 1000
	return time.Duration(float64(d) * (0.8 + 0.4*frac))
}

// orgBusyWait is how long a delivery whose organization has all its
// workers busy waits, at least (plus up to as much again of jitter).
const orgBusyWait = time.Second

// outcome is how one attempt went.
type outcome struct {
	status  string // delivered, retry, dead (retries spent), refused (4xx or a refused address)
	code    *int32
	err     string
	latency time.Duration
}

// Work sends the delivery and records the attempt.
func (w *DeliverWorker) Work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	s := w.svc
	d, ok, err := s.work.Message(ctx, job.Args.DeliveryID)
	if err != nil {
		return fmt.Errorf("loading delivery: %w", err)
	}
	if !ok {
		return nil // its endpoint was deleted
	}
	if d.Status == "delivered" || d.Status == "dead" || d.Status == "cancelled" {
		return nil
	}
	ep, ok, err := s.work.Target(ctx, d.WebhookID)
	if err != nil {
		return fmt.Errorf("loading webhook: %w", err)
	}
	if !ok {
		return nil
	}
	if !ep.Enabled {
		msg := "the endpoint is disabled"
		if err := s.work.Record(ctx, &webhookstore.Attempt{ID: d.ID, Status: "cancelled", Error: &msg}); err != nil {
			return err
		}
		return river.JobCancel(errors.New(msg))
	}
	// The organization's share of this process's workers: at it, the
	// delivery waits its turn without holding a worker or spending an
	// attempt.
	release, ok := s.orgs.Try(ctx, ep.OrganizationID, 0)
	if !ok {
		return river.JobSnooze(orgBusyWait + time.Duration(rand.Int64N(int64(orgBusyWait))))
	}
	defer release()
	if s.deps.Flow != nil {
		grant, err := s.deps.Flow.Acquire(ctx, Bucket.Name, ep.ID.String(), "job:"+strconv.FormatInt(job.ID, 10))
		if err != nil {
			return err
		}
		if !grant.Granted() {
			return river.JobSnooze(grant.Wait)
		}
		if grant.Lease != nil {
			defer func() { _ = s.deps.Flow.Release(context.WithoutCancel(ctx), grant.Lease) }()
		}
	}
	secret, err := s.deps.Box.Open(ep.SecretSealed, ep.ID[:])
	if err != nil {
		return river.JobCancel(fmt.Errorf("the signing secret does not open with secrets.key: %w", err))
	}
	secrets := []string{string(secret)}
	// After a rotation, the secret it replaced signs too until its overlap
	// ends (Postgres's clock, webhookstore.Target).
	if ep.PreviousSealed != nil {
		// One that does not open leaves the current secret signing alone:
		// the delivery is not lost for it.
		if previous, err := s.deps.Box.Open(ep.PreviousSealed, ep.ID[:]); err != nil {
			s.logger.WarnContext(ctx, "the previous webhook signing secret does not open with secrets.keys; signing with the current one only",
				"organization_id", ep.OrganizationID, "webhook_id", ep.ID, "error", err)
		} else {
			secrets = append(secrets, string(previous))
		}
	}
	o := s.send(ctx, ep.URL, secrets, "msg_"+d.ID.String(), []byte(d.Payload))
	o.err = errorText(o.err)
	if o.status == "retry" && job.Attempt >= job.MaxAttempts {
		o.status = "dead"
	}
	s.deps.Metrics.WebhookDeliveries.WithLabelValues(o.status).Inc()
	s.deps.Metrics.WebhookLatency.WithLabelValues(o.status).Observe(o.latency.Seconds())

	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String("outboxd.webhook_id", ep.ID.String()), attribute.String("outboxd.delivery_id", d.ID.String()),
			tracing.AttrOrganizationID.String(ep.OrganizationID), tracing.AttrStatus.String(o.status))
		if o.status != "delivered" {
			tracing.Fail(span, "webhook_"+o.status)
		}
	}
	rec := webhookstore.Attempt{ID: d.ID, Attempted: true, StatusCode: o.code, LatencyMs: ptr(int32(o.latency.Milliseconds()))}
	if o.err != "" {
		rec.Error = &o.err
	}
	bg := context.WithoutCancel(ctx)
	switch o.status {
	case "delivered":
		rec.Status = "delivered"
		if err := s.work.Succeeded(bg, ep.ID); err != nil {
			return err
		}
	case "retry":
		rec.Status = "retrying"
		rec.NextAttemptAt = ptr(time.Now().Add(s.backoff(job.ID, job.Attempt)))
	default:
		rec.Status = "dead"
	}
	if o.status != "delivered" {
		after, err := s.work.Failed(bg, ep.ID, rec.Status == "dead", s.cfg.DisableAfter)
		if err != nil {
			return fmt.Errorf("recording the endpoint's failure: %w", err)
		}
		// Disabled by this failure, not by an admin meanwhile (whose
		// disabling leaves disabled_at unset).
		if ep.Enabled && !after.Enabled && after.DisabledAt != nil {
			s.logger.WarnContext(ctx, "webhook endpoint disabled after failing too long", "organization_id", ep.OrganizationID,
				"webhook_id", ep.ID, "failing_since", after.FailingSince)
		}
	}
	if err := s.work.Record(bg, &rec); err != nil {
		return fmt.Errorf("recording delivery: %w", err)
	}
	switch rec.Status {
	case "retrying":
		return errors.New(o.err)
	case "dead":
		return river.JobCancel(errors.New(o.err))
	}
	return nil
}

// send makes one POST signed with each of secrets, the signatures
// space-separated in webhook-signature as Standard Webhooks allows. A 2xx
// delivers; a 4xx other than 408 and 429, and an address the guard
// refuses, will never succeed; anything else (5xx, 408, 429, timeouts,
// network errors) is retried.
func (s *Service) send(ctx context.Context, target string, secrets []string, msgID string, payload []byte) outcome {
	start := time.Now()
	now := time.Now()
	sigs := make([]string, len(secrets))
	for i, secret := range secrets {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			return outcome{status: "refused", err: "invalid signing secret"}
		}
		sigs[i], err = wh.Sign(msgID, now, payload)
		if err != nil {
			return outcome{status: "refused", err: "signing: " + err.Error()}
		}
	}
	sig := strings.Join(sigs, " ")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(payload))
	if err != nil {
		return outcome{status: "refused", err: netguard.RequestError(err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "outboxd-webhooks")
	req.Header.Set(standardwebhooks.HeaderWebhookID, msgID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	resp, err := s.client.Do(req)
	latency := time.Since(start)
	if err != nil {
		if errors.Is(err, netguard.ErrNotAllowed) || errors.Is(err, netguard.ErrRedirectRefused) {
			return outcome{status: "refused", err: netguard.RequestError(err), latency: latency}
		}
		return outcome{status: "retry", err: netguard.RequestError(err), latency: latency}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	code := int32(resp.StatusCode)
	o := outcome{code: &code, latency: latency}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		o.status = "delivered"
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		o.status, o.err = "retry", "HTTP "+resp.Status
	default:
		o.status, o.err = "refused", "HTTP "+resp.Status
	}
	return o
}

// maxErrorLen bounds the error an attempt records, in bytes.
const maxErrorLen = 1000

// errorText makes an attempt's error storable: the receiver chooses its
// status text (up to the client's 1 MiB of headers), and Postgres stores
// no NUL or invalid UTF-8 in the delivery's last_error and attempt_log.
// Control characters become U+FFFD and the text is cut at maxErrorLen.
func errorText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
	if len(s) <= maxErrorLen {
		return s
	}
	cut := maxErrorLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// AddWorkers registers the delivery worker.
func (s *Service) AddWorkers(workers *river.Workers) {
	river.AddWorker(workers, &DeliverWorker{svc: s})
}

// Queues are the queues a worker process runs for webhooks.
func (s *Service) Queues() map[string]river.QueueConfig {
	return map[string]river.QueueConfig{Queue: {MaxWorkers: s.cfg.MaxWorkers}}
}

// PeriodicJobs: the relay (Consumer) runs the webhooks' periodic job.
func (s *Service) PeriodicJobs() []*river.PeriodicJob { return nil }

func ptr[T any](v T) *T { return &v }
