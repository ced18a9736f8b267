package sentry_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/sentry"
	"github.com/outboxd/outboxd/executors/sentry/sentrytest"
)

func TestPreviewUpdateIssue(t *testing.T) {
	fake := sentrytest.New(t)
	source, err := sentry.New(&sentry.Config{BaseURL: fake.URL(), HTTPClient: fake.Client()})
	require.NoError(t, err)
	preview := func(params string) (*executors.Preview, error) {
		return source.(executors.Previewer).Preview(t.Context(), sentry.ActionUpdateIssue, json.RawMessage(params), execContext())
	}
	id := fake.SeedIssue("web", "TypeError: x is undefined")

	t.Run("before and after, read from Sentry", func(t *testing.T) {
		got, err := preview(`{"issue_id":"` + id + `","status":"resolved","assignedTo":"ada@example.com"}`)
		require.NoError(t, err)
		require.Equal(t, executors.PreviewDiff, got.Kind)
		require.Equal(t, "Update WEB-1: TypeError: x is undefined", got.Title)
		require.Equal(t, []executors.PreviewChange{
			{Field: "status", Before: "unresolved", After: "resolved"},
			{Field: "assignee", Before: "", After: "ada@example.com"},
		}, got.Changes)
	})
	t.Run("fields already so are no change", func(t *testing.T) {
		_, err := source.Execute(t.Context(), sentry.ActionUpdateIssue, json.RawMessage(`{"issue_id":"`+id+`","assignedTo":"ada@example.com"}`), execContext())
		require.NoError(t, err)
		got, err := preview(`{"issue_id":"` + id + `","status":"unresolved","assignedTo":"ada@example.com"}`)
		require.NoError(t, err)
		require.Empty(t, got.Changes)
	})
	t.Run("an issue Sentry does not have fails", func(t *testing.T) {
		_, err := preview(`{"issue_id":"1","status":"resolved"}`)
		var e *executors.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, "not_found", e.Code)
	})
}
