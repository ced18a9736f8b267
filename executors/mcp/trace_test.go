package mcp_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/platform/tracing"
)

// TestSource_ExecuteCarriesTraceparent: a call made inside a trace sends
// the trace's W3C traceparent with each of its requests to the connector;
// one made outside any trace sends none.
func TestSource_ExecuteCarriesTraceparent(t *testing.T) {
	t.Parallel()

	server := newTestServer(t, serverOptions{})
	server.addTool("create_issue", "Create an issue", createIssueSchema, nil, nil)
	source := newClient(t, nil).Source(server.connector())
	ec := executors.ExecContext{Token: testSecret, OrganizationID: "org_1", IdempotencyKey: "inv_0123"}

	_, err := source.Execute(context.Background(), "create_issue", []byte(`{"title":"untraced"}`), ec)
	require.NoError(t, err)
	untraced := server.recorded()
	require.NotEmpty(t, untraced)
	for _, r := range untraced {
		require.Empty(t, r.Header.Get("traceparent"))
	}

	parent := tracing.Parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	_, err = source.Execute(ctx, "create_issue", []byte(`{"title":"traced"}`), ec)
	require.NoError(t, err)
	traced := server.recorded()[len(untraced):]
	require.NotEmpty(t, traced)
	for _, r := range traced {
		sc := tracing.Parse(r.Header.Get("traceparent"))
		require.True(t, sc.IsValid(), "%s %s: traceparent %q", r.HTTPMethod, r.RPCMethod, r.Header.Get("traceparent"))
		require.Equal(t, parent.TraceID(), sc.TraceID())
	}
}
