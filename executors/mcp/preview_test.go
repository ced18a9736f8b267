package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/mcp"
)

func TestSource_Preview(t *testing.T) {
	t.Parallel()
	server := newTestServer(t, serverOptions{})
	tool := &recordingTool{}
	server.addTool("create_issue", "Create an issue in the tracker",
		`{"type":"object","properties":{"title":{"type":"string","description":"One line saying what is wrong"},"priority":{"type":"integer","description":"1 (urgent) to 4 (low)"}},"required":["title","team"]}`,
		nil, tool.handle)
	conn := server.connector()
	source := newClient(t, nil).Source(conn)
	pv, ok := source.(executors.Previewer)
	require.True(t, ok, "a connector renders previews")

	t.Run("each argument with its schema description", func(t *testing.T) {
		got, err := pv.Preview(context.Background(), "create_issue", json.RawMessage(`{"title":"Login broken","priority":1,"extra":{"a":true}}`), executors.ExecContext{})
		require.NoError(t, err)
		require.Equal(t, executors.PreviewToolArgs, got.Kind)
		require.Equal(t, "create_issue on "+conn.Name, got.Title)
		require.Equal(t, "Create an issue in the tracker", got.Text)
		require.Equal(t, []executors.PreviewField{
			{Name: "extra", Value: `{"a":true}`},
			{Name: "priority", Value: "1", Description: "1 (urgent) to 4 (low)"},
			{Name: "title", Value: "Login broken", Description: "One line saying what is wrong"},
		}, got.Fields)
		require.Equal(t, []string{"the tool's schema does not describe extra", "required by the tool's schema but not given: team"}, got.Notes)
		require.Empty(t, tool.recorded(), "a preview calls no tool")
	})
	t.Run("a tool the server does not offer fails", func(t *testing.T) {
		_, err := pv.Preview(context.Background(), "delete_everything", json.RawMessage(`{}`), executors.ExecContext{})
		var e *executors.Error
		require.True(t, errors.As(err, &e))
		require.Equal(t, mcp.CodeUnknownAction, e.Code)
	})
}
