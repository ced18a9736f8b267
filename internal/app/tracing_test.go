package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval"
	"github.com/outboxd/outboxd/internal/platform/tracing"
	"github.com/outboxd/outboxd/internal/platform/tracing/tracingtest"
)

// TestTracing_OneTracePerInvocation follows an allowed invocation, whose
// first call fails and is retried, and one approved in a later request
// through their spans: each is one trace from the invoke request to the
// completion, the provider gets the trace's traceparent, the logs carry its
// trace_id, and the approval's span and the job it released link to each
// other.
func TestTracing_OneTracePerInvocation(t *testing.T) {
	t.Parallel()

	receiver := tracingtest.NewReceiver(t)
	logs := &apptest.Logs{}
	b := apptest.Start(t, &apptest.Options{
		Tracing: tracing.Config{Enabled: true, Endpoint: receiver.URL, ServiceName: "outboxd-test"},
		Logs:    logs,
		Slack:   slackapproval.Config{Channel: "C0APPROVALS"},
	})
	hooks := make(chan string, 10) // the traceparent of each webhook delivery
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hooks <- r.Header.Get("traceparent")
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	r := b.Do("POST", "/v1/webhooks", b.Admin(), map[string]any{"url": hook.URL, "events": []string{"action_completed"}})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	b.StoreSlackToken("xoxb-traced")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	var failed atomic.Bool // Slack fails the first call, once
	b.Slack.SetHandler(func(w http.ResponseWriter, r *http.Request) {
		if failed.CompareAndSwap(false, true) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		apptest.SlackOK(w, r)
	})
	r = b.Invoke("send_message", map[string]any{"channel": "C1", "text": "a secret text"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	allowed := r.Body["invocation"].(map[string]any)
	require.Equal(t, "completed", allowed["status"])
	allowedID := allowed["id"].(string)

	b.SetModes(map[string]string{"slack:send_message": "require_approval"})
	r = b.Invoke("send_message", map[string]any{"channel": "C1", "text": "another secret text"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	pendingID := r.Body["invocation_id"].(string)
	// The approval request is posted to Slack; once approved, its message
	// is updated with the outcome.
	approvalPost := slackCall(t, b, func(r apptest.SlackRequest) bool {
		return r.Path == "/chat.postMessage" && r.Body["channel"] == "C0APPROVALS"
	})
	r = b.Do("POST", "/v1/invocations/"+pendingID+"/approve", b.Owner(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	b.WaitStatus(pendingID, invocation.StatusCompleted, time.Minute)
	approvalUpdate := slackCall(t, b, func(r apptest.SlackRequest) bool { return r.Path == "/chat.update" })
	posts := slices.DeleteFunc(b.Slack.Posts(), func(r apptest.SlackRequest) bool { return r.Body["channel"] != "C1" })
	require.Len(t, posts, 3)
	var delivered []string
	for len(delivered) < 2 {
		select {
		case tp := <-hooks:
			delivered = append(delivered, tp)
		case <-time.After(time.Minute):
			t.Fatalf("%d of 2 webhook deliveries arrived", len(delivered))
		}
	}

	// Stopping flushes every span.
	b.Stop()
	spans := receiver.Spans()

	// The allowed invocation: request → enqueue → job → call → provider
	// request, and the completion, in one trace.
	tr := invocationTrace(t, receiver, allowedID)
	server := one(t, tr, "POST /v1/sessions/{session_id}/actions/invoke")
	require.Equal(t, "outboxd-test", server.Service)
	require.Empty(t, server.ParentSpanID, "the request is the trace's root")
	enqueue := one(t, tr, "outboxd.enqueue")
	require.Equal(t, server.SpanID, enqueue.ParentSpanID)
	require.Equal(t, "allow", enqueue.Attributes["outboxd.mode"])
	insert := one(t, tr, "river.insert_many")
	require.Equal(t, enqueue.SpanID, insert.ParentSpanID)
	works := tracingtest.Named(tr, "river.work/execute_action")
	require.Len(t, works, 2, "both attempts are in the trace")
	for _, w := range works {
		require.Equal(t, enqueue.SpanID, w.ParentSpanID, "each attempt joins the enqueue's trace")
	}
	failedWork := tracingtest.WithAttribute(works, "outboxd.attempt", "1")
	require.Len(t, failedWork, 1)
	require.True(t, failedWork[0].Error)
	require.NotEmpty(t, failedWork[0].Attributes["outboxd.error_code"])
	require.True(t, child(t, tr, "outboxd.call", failedWork[0]).Error)
	work := tracingtest.WithAttribute(works, "outboxd.attempt", "2")[0]
	require.False(t, work.Error)
	require.Equal(t, allowedID, work.Attributes["outboxd.invocation_id"])
	require.Equal(t, "slack", work.Attributes["outboxd.source_id"])
	require.Equal(t, "send_message", work.Attributes["outboxd.action_id"])
	call := child(t, tr, "outboxd.call", work)
	request := child(t, tr, "HTTP POST", call)
	require.Equal(t, b.Slack.Server.URL, request.Attributes["url.full"], "the provider's path is not in the span")
	complete := one(t, tr, "outboxd.complete")
	require.Equal(t, work.SpanID, complete.ParentSpanID)
	require.Equal(t, "completed", complete.Attributes["outboxd.status"])

	// The provider got the traceparent of its request's span, at each
	// attempt.
	require.Equal(t, request.TraceID, tracing.Parse(posts[0].Traceparent).TraceID().String())
	sc := tracing.Parse(posts[1].Traceparent)
	require.True(t, sc.IsValid(), "traceparent %q", posts[1].Traceparent)
	require.Equal(t, request.TraceID, sc.TraceID().String())
	require.Equal(t, request.SpanID, sc.SpanID().String())

	// The log lines written inside the job carry its trace.
	completedLine := logLine(t, logs, "invocation completed", allowedID)
	require.Contains(t, completedLine, "trace_id="+work.TraceID)
	require.Contains(t, completedLine, "span_id="+work.SpanID)
	require.Contains(t, logLine(t, logs, "invocation created", allowedID), "trace_id="+work.TraceID)

	// The webhook delivery of its completion joins the trace too, and
	// its POST carries the trace.
	deliver := one(t, tr, "river.work/webhook_deliver")
	require.Equal(t, enqueue.SpanID, deliver.ParentSpanID)
	require.Equal(t, "delivered", deliver.Attributes["outboxd.status"])
	post := child(t, tr, "HTTP POST", deliver)
	require.Contains(t, delivered, "00-"+post.TraceID+"-"+post.SpanID+"-01")

	// The approved invocation: its job ran in the trace of the request
	// that asked for it, and the approval's span, in a trace of its own,
	// links to it.
	tr = invocationTrace(t, receiver, pendingID)
	enqueue = one(t, tr, "outboxd.enqueue")
	require.Equal(t, "pending", enqueue.Attributes["outboxd.status"])
	work = one(t, tr, "river.work/execute_action")
	require.Equal(t, enqueue.SpanID, work.ParentSpanID)
	one(t, tr, "outboxd.call")
	require.Equal(t, "completed", one(t, tr, "outboxd.complete").Attributes["outboxd.status"])
	require.Equal(t, work.TraceID, tracing.Parse(posts[2].Traceparent).TraceID().String())
	// The Slack approval message and its update are in the trace too.
	for _, kind := range []string{"slack_post_approval", "slack_update_approval"} {
		job := one(t, tr, "river.work/"+kind)
		require.Equal(t, enqueue.SpanID, job.ParentSpanID, kind)
		if kind == "slack_update_approval" {
			child(t, tr, "HTTP POST", job)
			continue
		}
		// The post job also updates its message when the preview was
		// stored while it posted (slackapproval.PostWorker): a second call.
		calls := slices.DeleteFunc(tracingtest.Named(tr, "HTTP POST"), func(s tracingtest.Span) bool { return s.ParentSpanID != job.SpanID })
		require.NotEmpty(t, calls, "spans called HTTP POST under %s", job.Name)
		require.LessOrEqual(t, len(calls), 2, "spans called HTTP POST under %s", job.Name)
	}
	require.Equal(t, work.TraceID, tracing.Parse(approvalPost.Traceparent).TraceID().String())
	require.Equal(t, work.TraceID, tracing.Parse(approvalUpdate.Traceparent).TraceID().String())
	decide := tracingtest.WithAttribute(tracingtest.Named(spans, "outboxd.decide"), "outboxd.invocation_id", pendingID)
	require.Len(t, decide, 1)
	require.Equal(t, "approved", decide[0].Attributes["outboxd.decision"])
	require.NotEqual(t, work.TraceID, decide[0].TraceID)
	require.Contains(t, decide[0].Links, tracingtest.Link{TraceID: enqueue.TraceID, SpanID: enqueue.SpanID})
	approve := one(t, receiver.Trace(decide[0].TraceID), "POST /v1/invocations/{id}/approve")
	require.Equal(t, approve.SpanID, decide[0].ParentSpanID)
	require.Equal(t, []tracingtest.Link{{TraceID: decide[0].TraceID, SpanID: decide[0].SpanID}}, work.Links,
		"the job links to the approval that released it")

	// The periodic jobs outside any invocation's trace are not traced.
	require.NotEmpty(t, tracingtest.Named(spans, "river.work/webhook_deliver"))
	for _, s := range spans {
		require.NotContains(t, []string{"river.work/relay", "river.work/expire_sweep"}, s.Name)
		if s.ParentSpanID == "" {
			require.Equal(t, "SPAN_KIND_SERVER", s.Kind, "%s is a root span but no request's", s.Name)
		}
	}

	// No span carries the params, nor an error's text.
	for _, s := range spans {
		require.Empty(t, s.StatusMessage, s.Name)
		for k, v := range s.Attributes {
			require.NotContains(t, v, "secret", "%s: %s", s.Name, k)
		}
	}
}

// TestTracing_OffExportsNothing runs an invocation with tracing off but an
// endpoint configured: nothing is exported, no traceparent goes out and
// none is stored.
func TestTracing_OffExportsNothing(t *testing.T) {
	t.Parallel()

	receiver := tracingtest.NewReceiver(t)
	logs := &apptest.Logs{}
	b := apptest.Start(t, &apptest.Options{Tracing: tracing.Config{Endpoint: receiver.URL}, Logs: logs})
	b.StoreSlackToken("xoxb-untraced")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	r := b.Invoke("send_message", map[string]any{"channel": "C1", "text": "untraced"}, "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	id := r.Body["invocation"].(map[string]any)["id"].(string)
	require.Equal(t, "completed", r.Body["invocation"].(map[string]any)["status"])
	b.Stop()

	require.Zero(t, receiver.Requests())
	posts := b.Slack.Posts()
	require.Len(t, posts, 1)
	require.Empty(t, posts[0].Traceparent)
	var stored *string
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT trace_context FROM action_invocations WHERE id = $1`, id).Scan(&stored))
	require.Nil(t, stored)
	require.NotContains(t, logLine(t, logs, "invocation completed", id), "trace_id")
}

// invocationTrace returns the trace of the enqueue of invocation id.
func invocationTrace(t *testing.T, receiver *tracingtest.Receiver, id string) []tracingtest.Span {
	t.Helper()
	enqueue := tracingtest.WithAttribute(tracingtest.Named(receiver.Spans(), "outboxd.enqueue"), "outboxd.invocation_id", id)
	require.Len(t, enqueue, 1, "the enqueue span of %s", id)
	return receiver.Trace(enqueue[0].TraceID)
}

// one returns the one span called name.
func one(t *testing.T, spans []tracingtest.Span, name string) tracingtest.Span {
	t.Helper()
	named := tracingtest.Named(spans, name)
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	require.Len(t, named, 1, "spans called %q among %v", name, names)
	return named[0]
}

// slackCall waits for Slack to get a request that match accepts.
func slackCall(t *testing.T, b *apptest.Bundle, match func(apptest.SlackRequest) bool) apptest.SlackRequest {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if i := slices.IndexFunc(b.Slack.Requests(), match); i >= 0 {
			return b.Slack.Requests()[i]
		}
		require.True(t, time.Now().Before(deadline), "Slack did not get the request: %+v", b.Slack.Requests())
	}
}

// child returns the one span called name whose parent is parent.
func child(t *testing.T, spans []tracingtest.Span, name string, parent tracingtest.Span) tracingtest.Span {
	t.Helper()
	children := slices.DeleteFunc(tracingtest.Named(spans, name), func(s tracingtest.Span) bool { return s.ParentSpanID != parent.SpanID })
	require.Len(t, children, 1, "spans called %q under %s", name, parent.Name)
	return children[0]
}

// logLine returns the line of logs with msg about invocation id.
func logLine(t *testing.T, logs *apptest.Logs, msg, id string) string {
	t.Helper()
	lines := strings.Split(logs.String(), "\n")
	i := slices.IndexFunc(lines, func(l string) bool {
		return strings.Contains(l, `msg="`+msg+`"`) && strings.Contains(l, "invocation_id="+id)
	})
	require.GreaterOrEqual(t, i, 0, "no %q line for %s in:\n%s", msg, id, logs.String())
	return lines[i]
}
