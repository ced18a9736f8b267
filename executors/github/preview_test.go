package github_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/github"
)

func TestPreviewCreateIssue(t *testing.T) {
	preview := func(b *bundle, params string) (*executors.Preview, error) {
		return b.source.(executors.Previewer).Preview(t.Context(), github.ActionCreateIssue, json.RawMessage(params), execContext(key(t)))
	}
	t.Run("the issue as it will be created", func(t *testing.T) {
		b := setup(t)
		got, err := preview(b, `{"owner":"octo","repo":"web","title":"Broken build","body":"It fails.","labels":["bug","ci"],"assignees":["ada","bob"]}`)
		require.NoError(t, err)
		require.Equal(t, executors.PreviewIssue, got.Kind)
		require.Equal(t, "Broken build", got.Title)
		require.Equal(t, "It fails.", got.Text)
		require.Equal(t, []executors.PreviewField{
			{Name: "repository", Value: "octo/web"}, {Name: "labels", Value: "bug, ci"}, {Name: "assignees", Value: "ada, bob"},
		}, got.Fields)
		require.Equal(t, []string{"bob cannot be assigned in octo/web: GitHub will refuse the issue"}, got.Notes)
		require.Empty(t, b.gh.Issues("octo", "web"), "a preview creates nothing")
	})
	t.Run("an assignee that is no login is refused, not looked up as another endpoint", func(t *testing.T) {
		b := setup(t)
		for _, a := range []string{".", "..", "octo/x", "../../user", "a--b", "-a"} {
			_, err := preview(b, `{"owner":"octo","repo":"web","title":"x","assignees":["ada","`+a+`"]}`)
			require.Equal(t, "invalid_params", requireExecError(t, err).Code, a)
		}
	})
	t.Run("a repository the token cannot see fails", func(t *testing.T) {
		b := setup(t)
		_, err := preview(b, `{"owner":"octo","repo":"missing","title":"x"}`)
		require.Equal(t, "not_found", requireExecError(t, err).Code)
	})
}
