package bench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// callTimes are when each waited call of a phase was sent and when its
// answer came back.
type callTimes []callTime

type callTime struct{ sent, answered time.Time }

// of is action i's (numbered from 1, as shareActions does).
func (c callTimes) of(i int) *callTime { return &c[i-1] }

// stageNames are where a waited call's time goes, in order: until its
// transaction began (the request, the front door, the group commit's
// wait), until River fetched its job (the commit, the fetch cooldown),
// until a worker began it (the begin group), until it was completed (the
// provider call and the completion), and until its answer was read (the
// notification, the waiter's read, the response).
var stageNames = [...]string{"request→created", "created→fetched", "fetched→started", "started→completed", "completed→answer", "request→answer"}

// stages are a phase's calls' times in each of stageNames, in
// milliseconds, each sorted.
type stages [len(stageNames)][]float64

// completion is one completed invocation of a phase: its key, its
// created_at, its job's attempted_at (the fetch; nil once River has
// deleted the job) and its started_at and completed_at.
type completion struct {
	Key              string
	Created          time.Time
	Fetched, Started *time.Time
	Completed        time.Time
}

// stagesOf splits each completed call of the phase into its stages,
// between the bench's sending and reading (one clock: the server's and
// this process's, the same machine's for the embedded server).
func stagesOf(done []completion, prefix string, calls callTimes) *stages {
	var st stages
	ms := func(from, to time.Time) float64 { return float64(to.Sub(from).Microseconds()) / 1000 }
	for _, d := range done {
		i, err := strconv.Atoi(strings.TrimPrefix(d.Key, prefix+"-"))
		if err != nil || i < 1 || i > len(calls) || calls.of(i).answered.IsZero() || d.Fetched == nil || d.Started == nil {
			continue
		}
		c := calls.of(i)
		for k, v := range []float64{ms(c.sent, d.Created), ms(d.Created, *d.Fetched), ms(*d.Fetched, *d.Started),
			ms(*d.Started, d.Completed), ms(d.Completed, c.answered), ms(c.sent, c.answered)} {
			st[k] = append(st[k], v)
		}
	}
	for k := range st {
		slices.Sort(st[k])
	}
	return &st
}

// printStages shows, for each phase whose clients waited for their
// results, the mean, p50 and p90 of each stage of a call.
func printStages(w io.Writer, results []*phaseResult) {
	header := false
	for _, r := range results {
		if r.stages == nil || len(r.stages[0]) == 0 {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\nwhere a waited call's time goes, mean / p50 / p90 in ms (this process's clock and the server's):\n%-28s", "phase")
			for _, name := range stageNames {
				fmt.Fprintf(w, " %19s", name)
			}
			fmt.Fprintln(w)
			header = true
		}
		fmt.Fprintf(w, "%-28s", r.name)
		for _, xs := range r.stages {
			var sum float64
			for _, x := range xs {
				sum += x
			}
			fmt.Fprintf(w, " %19s", fmt.Sprintf("%.1f / %.1f / %.1f", sum/float64(len(xs)), percentile(xs, 0.5), percentile(xs, 0.9)))
		}
		fmt.Fprintln(w)
	}
}
