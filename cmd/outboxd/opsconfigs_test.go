package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// opsExprs returns the PromQL of the dashboard's panels and of the alert
// rules, each named by its panel title or alert.
func opsExprs(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../../configs/grafana-dashboard.json")
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	exprs := map[string]string{}
	for _, p := range dash.Panels {
		for i, tg := range p.Targets {
			exprs["panel "+p.Title+" "+string(rune('A'+i))] = tg.Expr
		}
	}
	raw, err = os.ReadFile("../../configs/prometheus-alerts.yaml")
	require.NoError(t, err)
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	require.NoError(t, yaml.Unmarshal(raw, &rules))
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs["alert "+r.Alert] = r.Expr
		}
	}
	require.NotEmpty(t, exprs)
	return exprs
}

// TestConfigs_QueueGaugesAreNotSummedOverProcesses: every process reports
// the same outboxd_queue_* values (they are read from the database), so
// a sum over processes multiplies a queue's depth by their number; each
// use takes the max over processes first.
func TestConfigs_QueueGaugesAreNotSummedOverProcesses(t *testing.T) {
	t.Parallel()
	use := regexp.MustCompile(`outboxd_queue_(jobs|age_seconds)`)
	deduplicated := regexp.MustCompile(`max by \([a-z_, ]+\) \(outboxd_queue_(jobs|age_seconds)\b`)
	for name, expr := range opsExprs(t) {
		require.Len(t, deduplicated.FindAllString(expr, -1), len(use.FindAllString(expr, -1)),
			"%s: %s sums a queue gauge over processes", name, expr)
	}
}

// TestConfigs_LabelsExist: every label an expression selects or groups by
// is one of the metrics it reads.
func TestConfigs_LabelsExist(t *testing.T) {
	t.Parallel()
	labels := map[string][]string{
		"outboxd_invocations_total":                 {"mode", "status"},
		"outboxd_job_duration_seconds":              {"source", "outcome", "le"},
		"outboxd_approval_latency_seconds":          {"decision", "le"},
		"outboxd_connector_drift_total":             {"source"},
		"outboxd_connector_list_duration_seconds":   {"outcome", "le"},
		"outboxd_queue_jobs":                        {"queue", "state"},
		"outboxd_queue_age_seconds":                 {"queue"},
		"outboxd_event_stream_subscribers":          {},
		"outboxd_webhook_deliveries_total":          {"outcome"},
		"outboxd_webhook_delivery_duration_seconds": {"outcome", "le"},
		"outboxd_slack_notifications_total":         {"kind", "outcome"},
		"outboxd_mcp_calls_total":                   {"outcome"},
		"outboxd_mcp_wait_seconds":                  {"le"},
		"outboxd_mcp_sessions":                      {},
		"outboxd_mcp_list_changed_total":            {},
		"outboxd_mcp_sessions_limited_total":        {"outcome"},
		"outboxd_invocations_behind_total":          {},
		"up":                                        {"job", "instance"},
	}
	selector := regexp.MustCompile(`\b(outboxd_[a-z_]+|up)\b(\{([^}]*)\})?`)
	matcher := regexp.MustCompile(`([a-z_]+)\s*(=~|!~|!=|=)`)
	by := regexp.MustCompile(`by \(([^)]*)\)`)
	for name, expr := range opsExprs(t) {
		var known []string
		for _, m := range selector.FindAllStringSubmatch(expr, -1) {
			metric := strings.TrimSuffix(m[1], "_bucket")
			own, ok := labels[metric]
			require.True(t, ok, "%s: %s is not a metric outboxd exports", name, m[1])
			for _, l := range matcher.FindAllStringSubmatch(m[3], -1) {
				require.Contains(t, own, l[1], "%s: %s has no label %s", name, metric, l[1])
			}
			known = append(known, own...)
		}
		for _, m := range by.FindAllStringSubmatch(expr, -1) {
			for _, l := range strings.Split(m[1], ",") {
				require.Contains(t, known, strings.TrimSpace(l), "%s: grouped by a label its metrics lack", name)
			}
		}
	}
}

// TestConfigs_DeadLettersRisingCountsEveryInvocation: the alert fires when
// more than 10 invocations failed in 15 minutes, whatever their modes (6
// allowed and 6 approved ones are 12).
func TestConfigs_DeadLettersRisingCountsEveryInvocation(t *testing.T) {
	t.Parallel()
	expr := opsExprs(t)["alert OutboxdDeadLettersRising"]
	require.Equal(t, `sum(increase(outboxd_invocations_total{status="failed"}[15m])) > 10`, expr)
}

// TestConfigs_AlertWhenQueueGaugesVanish: a process that cannot read the
// database reports no queue gauge at all, so the alerts on them stop
// firing while its scrapes succeed; an alert fires on their absence.
func TestConfigs_AlertWhenQueueGaugesVanish(t *testing.T) {
	t.Parallel()
	require.Equal(t, `absent(max by (queue) (outboxd_queue_jobs{queue="actions"}))`, opsExprs(t)["alert OutboxdQueueMetricsMissing"])
}
