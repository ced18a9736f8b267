package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/slack"
	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/client"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
	"github.com/outboxd/outboxd/outbox"
)

// loopbackSlack answers chat.postMessage, after latency when set, and
// tells watchers when the call for an invocation arrives.
type loopbackSlack struct {
	server  *httptest.Server
	latency atomic.Int64 // time.Duration
	mu      sync.Mutex
	watch   map[string]chan time.Time
}

func newLoopbackSlack() *loopbackSlack {
	s := &loopbackSlack{watch: map[string]chan time.Time{}}
	s.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		s.mu.Lock()
		ch := s.watch[r.Header.Get("X-Outboxd-Idempotency-Key")]
		s.mu.Unlock()
		if ch != nil {
			select {
			case ch <- at:
			default:
			}
		}
		_, _ = io.Copy(io.Discard, r.Body)
		if d := time.Duration(s.latency.Load()); d > 0 {
			time.Sleep(d)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"channel":"C1","ts":"1503435956.000247"}`)
	}))
	return s
}

// expect returns a channel receiving when the call for invocation id arrives.
func (s *loopbackSlack) expect(id string) (<-chan time.Time, func()) {
	ch := make(chan time.Time, 1)
	s.mu.Lock()
	s.watch[id] = ch
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.watch, id)
		s.mu.Unlock()
	}
}

const benchOrg = "bench-org"

// startOutboxd runs outboxd (role all) in this process on a pool of size
// connections, with an unlimited slack.minute bucket, a Slack credential
// and send_message allowed, and starts counting completed invocations.
func (b *runner) startOutboxd(ctx context.Context, size int32) (stop func(), err error) {
	b.slack = newLoopbackSlack()
	cleanups := []func(){b.slack.server.Close}
	stop = func() {
		for _, c := range slices.Backward(cleanups) {
			c()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	cfg, err := pgxpool.ParseConfig(b.dbURL)
	if err != nil {
		return nil, err
	}
	if size > 0 {
		cfg.MaxConns = size
	}
	// Connections idle for a second close, so between phases the API's
	// pool (which app.New derives from this one) sends its statistics too.
	cfg.MaxConnIdleTime = idleClose
	cfg.HealthCheckPeriod = idleClose / 4
	b.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cleanups = append(cleanups, b.pool.Close)

	appCfg := &app.Config{
		HTTPAddr: "127.0.0.1:0", JWTSecret: secretbox.NewKey(), SecretsKey: secretbox.NewKey(),
		Providers:       map[string]executors.ProviderConfig{slack.SourceID: {BaseURL: b.slack.server.URL}},
		ShutdownTimeout: 30 * time.Second,
		Worker:          b.worker,
		// Measure outboxd, not Slack's rate limit: the bucket is taken on
		// every job but never runs dry.
		Buckets: []flow.BucketConfig{{Name: "slack.minute", Rate: 1_000_000, Interval: time.Second, Burst: 1_000_000, Scope: flow.ScopeOrg}},
		// Nor a session's invoke limit, made for one agent's pace.
		Outbox: outbox.Config{InvokesPerMinute: math.MaxInt32},
	}
	b.app, err = app.New(appCfg, app.RoleAll, b.pool, b.logger)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", appCfg.HTTPAddr)
	if err != nil {
		return nil, err
	}
	listenCtx, stopListening := context.WithCancel(ctx)
	b.listen(listenCtx)
	cleanups = append(cleanups, func() { stopListening(); <-b.listenDone })
	runCtx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- b.app.Serve(runCtx, ln, nil) }()
	cleanups = append(cleanups, func() { cancel(); <-served })
	base := "http://" + ln.Addr().String()

	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: b.cfg.Concurrency + 8}, Timeout: 5 * time.Minute}
	b.clientOf = func(org string, c auth.Claims) *client.Client {
		c.Org = org
		t, _ := auth.Mint(appCfg.JWTSecret, c, 24*time.Hour)
		return &client.Client{BaseURL: base, HTTP: httpClient, Token: t}
	}

	b.owner = b.clientOf(benchOrg, ownerClaims)
	b.service = b.clientOf(benchOrg, serviceClaims)
	// One agent session per client of the invoke phase, as agents each
	// have their own.
	b.sessions = make([]*client.Session, b.cfg.Concurrency)
	for i := range b.sessions {
		id := fmt.Sprintf("bench-session-%d", i)
		c := b.clientOf(benchOrg, auth.Claims{Kind: auth.KindSandbox, SessionID: id, RegisteredClaims: jwt.RegisteredClaims{Subject: "bench-agent"}})
		b.sessions[i] = c.Session(id)
	}
	if err := allowSlack(ctx, b.owner); err != nil {
		return nil, err
	}
	// Until the batch endpoint exists, its phases are reported as skipped.
	_, err = b.service.EnqueueBatch(ctx, nil)
	var apiErr *client.Error
	if err != nil && !errors.As(err, &apiErr) {
		return nil, err
	}
	if apiErr != nil && (apiErr.Status == http.StatusNotFound || apiErr.Status == http.StatusMethodNotAllowed) {
		b.noBatch = fmt.Sprintf("POST /v1/envelopes/batch answered %d: not built yet", apiErr.Status)
	}
	return stop, nil
}

var (
	ownerClaims   = auth.Claims{Kind: auth.KindUser, Role: auth.RoleOwner, RegisteredClaims: jwt.RegisteredClaims{Subject: "bench-owner"}}
	serviceClaims = auth.Claims{Kind: auth.KindService, RegisteredClaims: jwt.RegisteredClaims{Subject: "bench"}}
)

// allowSlack stores the bench's Slack credential in the organization of
// owner and allows send_message there.
func allowSlack(ctx context.Context, owner *client.Client) error {
	if err := owner.PutCredential(ctx, "slack", "xoxb-bench", ""); err != nil {
		return fmt.Errorf("storing the bench credential: %w", err)
	}
	if err := owner.PutActionModes(ctx, map[string]string{"slack:send_message": "allow"}); err != nil {
		return fmt.Errorf("allowing send_message: %w", err)
	}
	return nil
}

// listen counts the execute jobs River finishes. It does not LISTEN on
// the database: every notifying commit makes each listening backend run a
// transaction to read the queue, which would count as outboxd's.
func (b *runner) listen(ctx context.Context) {
	events, cancel := b.app.River.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: 100_000,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	b.listenDone = make(chan struct{})
	go func() {
		defer close(b.listenDone)
		defer cancel()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-events:
				if !ok {
					return
				}
				if e.Job.Kind != (invocation.ExecuteArgs{}).Kind() {
					continue
				}
				if e.Kind == river.EventKindJobCompleted {
					b.completed.Add(1)
				} else {
					b.failed.Add(1)
				}
			}
		}
	}()
}

// envelope is the bench's Slack message envelope number i of prefix.
func envelope(prefix string, i int, approval string) *client.Envelope {
	return &client.Envelope{
		ExternalID: fmt.Sprintf("%s-%d", prefix, i),
		Tool:       client.EnvelopeTool{Source: "slack", Action: "send_message"},
		Args:       map[string]string{"channel": "C1", "text": fmt.Sprintf("bench message %d", i)},
		Approval:   approval,
	}
}

// enqueue posts one envelope, which must be new.
func (b *runner) enqueue(ctx context.Context, e *client.Envelope) (*client.EnvelopeView, error) {
	view, err := b.service.Enqueue(ctx, e)
	if err != nil {
		return nil, fmt.Errorf("POST /v1/envelopes: %w", err)
	}
	if !view.Created {
		return nil, fmt.Errorf("POST /v1/envelopes: envelope %s existed already", e.ExternalID)
	}
	return view, nil
}

// postSingles posts n envelopes one request each from the configured
// number of concurrent clients.
func (b *runner) postSingles(ctx context.Context, prefix string, n int) error {
	return shareActions(b.cfg.Concurrency, n, func(_ int, take func() (int, bool)) error {
		for i, ok := take(); ok; i, ok = take() {
			if _, err := b.enqueue(ctx, envelope(prefix, i, "")); err != nil {
				return err
			}
		}
		return nil
	})
}

// shareActions runs clients concurrent clients over the actions 1..n:
// client k (from 0) runs work, whose take hands out the next action not
// yet taken. It returns the first error a client returned.
func shareActions(clients, n int, work func(k int, take func() (int, bool)) error) error {
	var next atomic.Int64
	take := func() (int, bool) {
		i := int(next.Add(1))
		return i, i <= n
	}
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for k := range clients {
		wg.Go(func() {
			if err := work(k, take); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// postInvokes makes n allow-mode invokes through the REST API (POST
// /v1/sessions/{id}/actions/invoke) from the configured number of
// concurrent clients, each in its own session, with idempotency keys
// <prefix>-i. Each invoke waits for its result, as an MCP call does.
func (b *runner) postInvokes(ctx context.Context, prefix string, calls callTimes) error {
	return shareActions(len(b.sessions), len(calls), func(k int, take func() (int, bool)) error {
		session := b.sessions[k]
		for i, ok := take(); ok; i, ok = take() {
			calls.of(i).sent = time.Now()
			res, err := session.Invoke(ctx, client.InvokeRequest{Integration: "slack", Action: "send_message",
				Params: map[string]string{"channel": "C1", "text": fmt.Sprintf("bench message %d", i)}}, fmt.Sprintf("%s-%d", prefix, i))
			calls.of(i).answered = time.Now()
			if err == nil && res.Status != http.StatusOK {
				err = fmt.Errorf("answered %d with the invocation %s", res.Status, res.Invocation.Status)
			}
			if err != nil {
				return fmt.Errorf("POST /v1/sessions/%s/actions/invoke: %w", session.ID, err)
			}
		}
		return nil
	})
}

// postMCP makes n allow-mode tools/call requests on the MCP front door
// from the configured number of concurrent MCP clients (mcpClient, each
// with a session), each with the service token, so each call is an
// envelope whose external id is the call's idempotency key (<prefix>-i).
// Each call waits for its result.
func (b *runner) postMCP(ctx context.Context, prefix string, calls callTimes) error {
	return shareActions(b.cfg.Concurrency, len(calls), func(_ int, take func() (int, bool)) error {
		client, err := connectMCP(ctx, b.service.HTTP, b.service.BaseURL+"/mcp", b.service.Token)
		if err != nil {
			return fmt.Errorf("connecting to /mcp: %w", err)
		}
		defer client.close(context.WithoutCancel(ctx))
		for i, ok := take(); ok; i, ok = take() {
			args := map[string]string{"channel": "C1", "text": fmt.Sprintf("bench message %d", i)}
			calls.of(i).sent = time.Now()
			if err := client.callTool(ctx, "slack.send_message", args, fmt.Sprintf("%s-%d", prefix, i)); err != nil {
				return fmt.Errorf("tools/call: %w", err)
			}
			calls.of(i).answered = time.Now()
		}
		return nil
	})
}

// postPaced posts warm envelopes (external ids warm-<prefix>-i) and then
// n more one request each at rate per second, each at its own time
// whatever became of the earlier ones (an open loop, as independent
// callers would), so latency is measured at that load rather than at
// whatever rate the clients manage.
func (b *runner) postPaced(ctx context.Context, prefix string, warm, n, rate int) error {
	errs := make(chan error, warm+n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 1; i <= warm+n; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i-1) * time.Second / time.Duration(rate))))
		e := envelope(prefix, i-warm, "")
		if i <= warm {
			e = envelope("warm-"+prefix, i, "")
		}
		wg.Go(func() {
			if _, err := b.enqueue(ctx, e); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

var errNoBatch = errors.New("the batch endpoint is not available")

// postBatches posts n envelopes through POST /v1/envelopes/batch, at most
// four requests at once. ids, when not nil, receives the action ids.
func (b *runner) postBatches(ctx context.Context, prefix string, n int, ids *[]string) error {
	if b.noBatch != "" {
		return errNoBatch
	}
	type batch struct{ from, to int }
	batches := make(chan batch, n/b.cfg.BatchSize+1)
	for from := 1; from <= n; from += b.cfg.BatchSize {
		batches <- batch{from, min(n, from+b.cfg.BatchSize-1)}
	}
	close(batches)
	var mu sync.Mutex
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range min(4, len(batches)) {
		wg.Go(func() {
			for bt := range batches {
				items := make([]*client.Envelope, 0, bt.to-bt.from+1)
				for i := bt.from; i <= bt.to; i++ {
					items = append(items, envelope(prefix, i, ""))
				}
				got, err := b.postBatch(ctx, items)
				if err != nil {
					errs <- err
					return
				}
				if ids != nil {
					mu.Lock()
					*ids = append(*ids, got...)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// postBatch posts one batch and requires every item to be created.
func (b *runner) postBatch(ctx context.Context, items []*client.Envelope) ([]string, error) {
	got, err := b.service.EnqueueBatch(ctx, items)
	if err != nil {
		return nil, fmt.Errorf("POST /v1/envelopes/batch: %w", err)
	}
	if len(got) != len(items) {
		return nil, fmt.Errorf("batch of %d answered %d items", len(items), len(got))
	}
	ids := make([]string, len(items))
	for i, e := range got {
		if e.Error != nil {
			return nil, fmt.Errorf("batch item %d not created: %s: %s", i, e.Error.Code, e.Error.Message)
		}
		if !e.Created {
			return nil, fmt.Errorf("batch item %d not created: envelope %s existed already", i, e.ExternalID)
		}
		ids[i] = e.ActionID
	}
	return ids, nil
}

// approvalLatency parks k invocations for approval, then approves them one
// at a time on an idle queue and times each from the approve response to
// the call reaching Slack.
func (b *runner) approvalLatency(ctx context.Context, k int) (*phaseResult, error) {
	ids := make([]string, k)
	for i := range k {
		view, err := b.enqueue(ctx, envelope("approval", i+1, "required"))
		if err != nil {
			return nil, fmt.Errorf("parking an envelope for approval: %w", err)
		}
		ids[i] = view.ActionID
	}
	x0, err := b.startPhase(ctx)
	if err != nil {
		return nil, err
	}
	latencies := make([]float64, 0, k)
	for _, id := range ids {
		target := b.completed.Load() + 1
		called, forget := b.slack.expect(id)
		_, err := b.owner.Approve(ctx, id, "once")
		approved := time.Now()
		if err != nil {
			forget()
			return nil, fmt.Errorf("approve: %w", err)
		}
		select {
		case at := <-called:
			latencies = append(latencies, max(0, at.Sub(approved).Seconds()))
		case <-time.After(time.Minute):
			forget()
			return nil, fmt.Errorf("the approved invocation %s never reached Slack", id)
		}
		forget()
		// An idle queue: the next approval waits for this one to finish.
		if err := b.waitCompleted(ctx, target, b.failed.Load()); err != nil {
			return nil, err
		}
	}
	rss, x1, err := b.endPhase(ctx)
	if err != nil {
		return nil, err
	}
	slices.Sort(latencies)
	return &phaseResult{
		name: "approve → provider call", actions: k, latencies: latencies, xacts: x1 - x0, peakRSSkB: rss,
		note: "one at a time; p50/p99 from the approve response to Slack's receipt; xact/action includes the approve request",
	}, nil
}

// fillBacklog leaves n envelopes queued: they are enqueued while the
// actions queue is paused, then their jobs are scheduled an hour ahead —
// the state a rate bucket's snooze leaves a job in — and the queue resumes.
func (b *runner) fillBacklog(ctx context.Context, n int) (*phaseResult, error) {
	if err := b.app.River.QueuePause(ctx, invocation.QueueActions, nil); err != nil {
		return nil, err
	}
	time.Sleep(time.Second) // the producer hears of the pause
	x0, err := b.startPhase(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	err = b.postBatches(ctx, "backlog", n, nil)
	how := "through the batch endpoint"
	if errors.Is(err, errNoBatch) {
		how = "one request each (no batch endpoint)"
		err = b.postSingles(ctx, "backlog", n)
	}
	if err != nil {
		return nil, err
	}
	enqueue := time.Since(start)
	rss, x1, err := b.endPhase(ctx)
	if err != nil {
		return nil, err
	}
	tag, err := b.pool.Exec(ctx, `UPDATE river_job SET state = 'scheduled', scheduled_at = now() + interval '1 hour'
		WHERE queue = $1 AND state = 'available'`, invocation.QueueActions)
	if err != nil {
		return nil, err
	}
	if err := b.app.River.QueueResume(ctx, invocation.QueueActions, nil); err != nil {
		return nil, err
	}
	if tag.RowsAffected() < int64(n) {
		return nil, fmt.Errorf("only %d of %d backlog jobs were left queued", tag.RowsAffected(), n)
	}
	return &phaseResult{
		name: fmt.Sprintf("backlog fill (%d)", n), actions: n, enqueue: enqueue, xacts: x1 - x0, peakRSSkB: rss,
		note: "enqueued " + how + " on a paused queue; not executed: their jobs wait an hour",
	}, nil
}
