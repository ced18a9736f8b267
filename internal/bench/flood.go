package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// neighbourOrg is the organization that goes on with its own work while
// the bench's floods the queue.
const neighbourOrg = "bench-neighbour"

// neighbourEvery is the neighbour's pace during a flood: an envelope
// every 20 ms, 50 a second.
const neighbourEvery = 20 * time.Millisecond

// flood measures what one organization's flood does to another's work:
// the bench's organization posts n envelopes through the batch endpoint
// as fast as it can, while a second organization posts one envelope
// every neighbourEvery, until the flood's n have completed. It returns
// the flood's row and the neighbour's, whose p50 and p99 are the wait the
// flood put on another organization's actions.
func (b *runner) flood(ctx context.Context, n int) ([]*phaseResult, error) {
	if b.noBatch != "" {
		return []*phaseResult{{name: "flood", note: b.noBatch}}, nil
	}
	neighbour := b.clientOf(neighbourOrg, serviceClaims)
	if err := allowSlack(ctx, b.clientOf(neighbourOrg, ownerClaims)); err != nil {
		return nil, fmt.Errorf("the neighbour organization: %w", err)
	}
	x0, err := b.startPhase(ctx)
	if err != nil {
		return nil, err
	}
	before, failedBefore := b.completed.Load(), b.failed.Load()
	cpu0, pg0 := b.cpuUsed()
	start := time.Now()

	// The neighbour's envelopes, each in a request of its own so that a
	// slow answer does not hold back the next.
	stop := make(chan struct{})
	var (
		posts  sync.WaitGroup
		posted int
		errMu  sync.Mutex
		postEr error
	)
	ticking := make(chan struct{})
	go func() {
		defer close(ticking)
		tick := time.NewTicker(neighbourEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			posted++
			e := envelope("neighbour", posted, "")
			posts.Go(func() {
				view, err := neighbour.Enqueue(ctx, e)
				if err == nil && !view.Created {
					err = fmt.Errorf("envelope %s existed already", e.ExternalID)
				}
				if err != nil {
					errMu.Lock()
					if postEr == nil {
						postEr = fmt.Errorf("the neighbour's POST /v1/envelopes: %w", err)
					}
					errMu.Unlock()
				}
			})
		}
	}()
	halt := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-ticking
		posts.Wait()
	}
	defer halt()

	if err := b.postBatches(ctx, "flood", n, nil); err != nil {
		return nil, err
	}
	enqueue := time.Since(start)
	// The flood has completed (near enough: the neighbour's own count
	// here too) once n jobs more have.
	if err := b.waitCompleted(ctx, before+int64(n), failedBefore); err != nil {
		return nil, err
	}
	halt()
	if postEr != nil {
		return nil, postEr
	}
	if err := b.waitCompleted(ctx, before+int64(n+posted), failedBefore); err != nil {
		return nil, err
	}
	total := time.Since(start)
	cpu1, pg1 := b.cpuUsed()
	rss, x1, err := b.endPhase(ctx)
	if err != nil {
		return nil, err
	}
	if posted == 0 {
		return nil, errors.New("the neighbour posted nothing during the flood")
	}
	return []*phaseResult{{
		name: fmt.Sprintf("flood, batch (%d)", n), prefix: "flood", actions: n, enqueue: enqueue, total: total,
		xacts: x1 - x0, peakRSSkB: rss, cpu: cpu1 - cpu0, pgCPU: cpuDelta(pg0, pg1),
		note: "the bench's organization floods the queue while another posts an envelope every " + neighbourEvery.String() + "; xacts and CPU are both's",
	}, {
		name: "neighbour during flood", prefix: "neighbour", org: neighbourOrg, actions: posted,
		note: "another organization's envelopes, one every " + neighbourEvery.String() + " while the flood ran: p50/p99 are their wait behind it",
	}}, nil
}
