package main

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/internal/platform/tracing"
	"github.com/outboxd/outboxd/internal/platform/tracing/tracingtest"
)

// TestServe_TracesAcrossAPIAndWorkerProcesses turns tracing on with the
// standard OTEL_* variables and follows an invocation from the API
// process's request to the worker process's provider call and completion:
// one trace, exported by both processes; and one approved in a later
// request, whose job joins its trace and links to the approval.
func TestServe_TracesAcrossAPIAndWorkerProcesses(t *testing.T) {
	t.Parallel()
	receiver := tracingtest.NewReceiver(t)
	slack := apptest.NewSlack(t, nil)
	env := slices.Concat(baseEnv(pgtest.URL(t), slack.Server.URL), []string{
		"OUTBOXD_TRACING_ENABLED=true",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + receiver.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_BSP_SCHEDULE_DELAY=50", // ms: export soon, the processes are killed at the end
	})

	apiAddr, workerAddr := freeAddr(t), freeAddr(t)
	api := outboxd(t, slices.Concat(env, []string{"OTEL_SERVICE_NAME=outboxd-api"}), "serve", "--role=api", "--http-addr", apiAddr)
	wrk := outboxd(t, slices.Concat(env, []string{"OTEL_SERVICE_NAME=outboxd-worker"}), "serve", "--role=worker", "--http-addr", workerAddr)
	waitReady(t, apiAddr, api)
	waitReady(t, workerAddr, wrk)

	b := &apptest.Bundle{T: t, URL: "http://" + apiAddr, Secret: "separate-process-secret-0123"}
	b.StoreSlackToken("xoxb-separate")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	r := b.Invoke("send_message", map[string]any{"channel": "C1", "text": "traced across processes"})
	require.Equal(t, http.StatusOK, r.Status, "%s\napi: %s\nworker: %s", r.Raw, api.output, wrk.output)
	id := r.Body["invocation"].(map[string]any)["id"].(string)
	require.Equal(t, "completed", r.Body["invocation"].(map[string]any)["status"])

	b.SetModes(map[string]string{"slack:send_message": "require_approval"})
	r = b.Invoke("send_message", map[string]any{"channel": "C1", "text": "approved across processes"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	approvedID := r.Body["invocation_id"].(string)
	r = b.Do("POST", "/v1/invocations/"+approvedID+"/approve", b.Owner(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	// Wait for both processes' spans of the invocations' traces.
	want := []string{"POST /v1/sessions/{session_id}/actions/invoke", "outboxd.enqueue", "river.insert_many",
		"river.work/execute_action", "outboxd.call", "HTTP POST", "outboxd.complete"}
	trace := waitTrace(t, receiver, id, want)
	approved := waitTrace(t, receiver, approvedID, want)
	service := map[string]string{}
	for _, s := range trace {
		service[s.Name] = s.Service
	}
	require.Equal(t, "outboxd-api", service["POST /v1/sessions/{session_id}/actions/invoke"])
	require.Equal(t, "outboxd-api", service["outboxd.enqueue"])
	require.Equal(t, "outboxd-worker", service["river.work/execute_action"])
	require.Equal(t, "outboxd-worker", service["outboxd.call"])
	require.Equal(t, "outboxd-worker", service["outboxd.complete"])
	enqueue := tracingtest.Named(trace, "outboxd.enqueue")[0]
	require.Equal(t, enqueue.SpanID, tracingtest.Named(trace, "river.work/execute_action")[0].ParentSpanID,
		"the worker's job is the API's enqueue's child")

	// The approved job ran in the worker process, in its invocation's
	// trace, linked to the approval in the API process.
	work := tracingtest.Named(approved, "river.work/execute_action")[0]
	require.Equal(t, "outboxd-worker", work.Service)
	require.Equal(t, tracingtest.Named(approved, "outboxd.enqueue")[0].SpanID, work.ParentSpanID)
	var decide []tracingtest.Span
	for deadline := time.After(time.Minute); len(decide) == 0; {
		changed := receiver.Changed()
		if decide = tracingtest.WithAttribute(tracingtest.Named(receiver.Spans(), "outboxd.decide"), "outboxd.invocation_id", approvedID); len(decide) > 0 {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("no outboxd.decide span of the approval")
		}
	}
	require.Len(t, decide, 1)
	require.Equal(t, "outboxd-api", decide[0].Service)
	require.Equal(t, []tracingtest.Link{{TraceID: decide[0].TraceID, SpanID: decide[0].SpanID}}, work.Links)

	// Slack got the traces.
	posts := slack.Posts()
	require.Len(t, posts, 2)
	require.Equal(t, enqueue.TraceID, tracing.Parse(posts[0].Traceparent).TraceID().String())
	require.Equal(t, work.TraceID, tracing.Parse(posts[1].Traceparent).TraceID().String())
}

// waitTrace waits for the trace of invocation id to hold a span of each
// name in want, and returns it.
func waitTrace(t *testing.T, receiver *tracingtest.Receiver, id string, want []string) []tracingtest.Span {
	t.Helper()
	var trace []tracingtest.Span
	deadline := time.After(time.Minute)
	for {
		changed := receiver.Changed()
		if enqueue := tracingtest.WithAttribute(tracingtest.Named(receiver.Spans(), "outboxd.enqueue"), "outboxd.invocation_id", id); len(enqueue) == 1 {
			trace = receiver.Trace(enqueue[0].TraceID)
			if !slices.ContainsFunc(want, func(name string) bool { return len(tracingtest.Named(trace, name)) == 0 }) {
				return trace
			}
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the trace of %s lacks some of %v: %+v", id, want, trace)
		}
	}
}
