package bench

import (
	"fmt"
	"io"
	"time"
)

func printBenchTable(w io.Writer, results []*phaseResult) {
	var riverRate float64
	for _, r := range results {
		if r.river && r.total > 0 {
			riverRate = float64(r.actions) / r.total.Seconds()
		}
	}
	fmt.Fprintf(w, "\n%-28s %7s %10s %10s %8s %9s %9s %12s %9s %17s\n",
		"phase", "actions", "enqueue/s", "actions/s", "÷River", "p50", "p99", "xact/action", "peak RSS", "CPU µs/action")
	var notes []string
	for _, r := range results {
		if r.actions == 0 {
			fmt.Fprintf(w, "%-28s skipped: %s\n", r.name, r.note)
			continue
		}
		dash := "—"
		enqueue, rate, ratio, p50, p99 := dash, dash, dash, dash, dash
		if r.enqueue > 0 {
			enqueue = fmt.Sprintf("%.0f", float64(r.actions)/r.enqueue.Seconds())
		}
		if r.total > 0 {
			v := float64(r.actions) / r.total.Seconds()
			rate = fmt.Sprintf("%.0f", v)
			if riverRate > 0 {
				ratio = fmt.Sprintf("%.3f", v/riverRate)
			}
		}
		if len(r.latencies) > 0 {
			p50, p99 = seconds(percentile(r.latencies, 0.50)).String(), seconds(percentile(r.latencies, 0.99)).String()
		}
		cpu := dash
		if r.cpu > 0 {
			cpu = fmt.Sprintf("%d", r.cpu.Microseconds()/int64(r.actions))
			if r.pgCPU >= 0 {
				cpu += fmt.Sprintf(" + %d PG", r.pgCPU.Microseconds()/int64(r.actions))
			}
		}
		xacts, rss := dash, dash
		if r.total > 0 { // a phase's own row, not the neighbour's beside it
			xacts, rss = fmt.Sprintf("%.2f", float64(r.xacts)/float64(r.actions)), fmt.Sprintf("%d MB", r.peakRSSkB/1024)
		}
		fmt.Fprintf(w, "%-28s %7d %10s %10s %8s %9s %9s %12s %9s %17s\n",
			r.name, r.actions, enqueue, rate, ratio, p50, p99, xacts, rss, cpu)
		if r.note != "" {
			notes = append(notes, r.name+": "+r.note)
		}
	}
	notes = append(notes, "River raw: jobs inserted before the clock starts, so it has no enqueue rate or latency",
		"CPU µs/action: this process (outboxd, the HTTP clients, the loopback Slack) + the embedded Postgres (PG, not shown on another server)")
	for _, n := range notes {
		fmt.Fprintln(w, "  "+n)
	}
}

// printComparison compares the MCP phase with single (actions/s) and
// with the REST invoke (p50), the measures of the MCP front door's
// targets, when the three phases ran.
func printComparison(w io.Writer, results []*phaseResult) {
	byName := map[string]*phaseResult{}
	for _, r := range results {
		if r.actions > 0 && r.total > 0 && len(r.latencies) > 0 {
			byName[r.name] = r
		}
	}
	single, invoke, mcp := byName["single"], byName["invoke (REST)"], byName["mcp tools/call"]
	if single == nil || invoke == nil || mcp == nil {
		return
	}
	rate := func(r *phaseResult) float64 { return float64(r.actions) / r.total.Seconds() }
	p50 := func(r *phaseResult) time.Duration { return seconds(percentile(r.latencies, 0.50)) }
	fmt.Fprintf(w, "\nmcp tools/call: %.0f %% of single's actions/s, %.0f %% of the REST invoke's; p50 %+.1f ms against the REST invoke's\n",
		100*rate(mcp)/rate(single), 100*rate(mcp)/rate(invoke), float64(p50(mcp)-p50(invoke))/float64(time.Millisecond))
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(100 * time.Microsecond)
}
