package linear_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/linear"
)

func (b *testBundle) preview(t *testing.T, action, params string) (*executors.Preview, error) {
	t.Helper()
	return b.source.(executors.Previewer).Preview(t.Context(), action, json.RawMessage(params), execContext())
}

func TestPreviewCreateIssue(t *testing.T) {
	b := setup(t)
	got, err := b.preview(t, linear.ActionCreateIssue,
		`{"teamId":"team-eng","title":"Flaky deploy","description":"Fails on Mondays.","assigneeId":"user-ada","labelIds":["label-bug","label-gone"],"priority":2}`)
	require.NoError(t, err)
	require.Equal(t, executors.PreviewIssue, got.Kind)
	require.Equal(t, "Flaky deploy", got.Title)
	require.Equal(t, "Fails on Mondays.", got.Text)
	require.Equal(t, []executors.PreviewField{
		{Name: "team", Value: "ENG"}, {Name: "assignee", Value: "Ada Lovelace"},
		{Name: "labels", Value: "Bug, label-gone"}, {Name: "priority", Value: "High"},
	}, got.Fields)
	require.Equal(t, []string{"issueLabel label-gone is shown by its id: Linear does not know it"}, got.Notes)
	require.Zero(t, b.fake.IssueCount(), "a preview creates nothing")
}

func TestPreviewUpdateIssue(t *testing.T) {
	t.Run("before and after of the changed fields, read from Linear", func(t *testing.T) {
		b := setup(t)
		id := b.fake.SeedIssue("team-eng", "", "Old title")
		got, err := b.preview(t, linear.ActionUpdateIssue,
			`{"issueId":"`+id+`","title":"New title","stateId":"state-todo","assigneeId":"user-alan","priority":1}`)
		require.NoError(t, err)
		require.Equal(t, executors.PreviewDiff, got.Kind)
		require.Equal(t, "Update ENG-1: Old title", got.Title)
		require.Equal(t, []executors.PreviewChange{
			{Field: "title", Before: "Old title", After: "New title"},
			{Field: "priority", Before: "No priority", After: "Urgent"},
			{Field: "assignee", Before: "", After: "Alan Turing"},
		}, got.Changes, "the state it already has is no change")
		require.Equal(t, "Old title", b.fake.Issue(id).Title, "a preview changes nothing")
	})
	t.Run("an issue Linear does not know fails", func(t *testing.T) {
		b := setup(t)
		_, err := b.preview(t, linear.ActionUpdateIssue, `{"issueId":"ENG-404","title":"x"}`)
		var e *executors.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, "not_found", e.Code)
	})
}
