package linear_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/linear"
	"github.com/outboxd/outboxd/executors/linear/lineartest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	// testAPIKey is a personal API key, sent as it is.
	testAPIKey = "lin_api_TESTsecret0123456789abcdef"
	// testOAuthToken is an OAuth access token, sent as a Bearer token.
	testOAuthToken = "lin_oauth_TESTsecret9876543210fedcba"

	idempotencyKey = "0196a3c2-7e1f-7c3a-9d4e-5f6a7b8c9d0e"
)

type testBundle struct {
	source executors.Source
	fake   *lineartest.Server
}

// setup starts a loopback Linear over an empty workspace that accepts
// testAPIKey and testOAuthToken, and a Source pointed at it.
func setup(t *testing.T) *testBundle {
	t.Helper()

	fake := lineartest.New(t)
	fake.AcceptOnly(testAPIKey, "Bearer "+testOAuthToken)

	source, err := linear.New(&linear.Config{BaseURL: fake.URL(), HTTPClient: fake.Client()})
	require.NoError(t, err)
	return &testBundle{source: source, fake: fake}
}

// answer returns a handler replying with status, body and extra headers.
func answer(status int, body string, headers ...string) lineartest.Handler {
	return func(w http.ResponseWriter, _ *http.Request, _ lineartest.Call) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// byOperation dispatches on the request's operation name.
func byOperation(handlers map[string]lineartest.Handler) lineartest.Handler {
	return func(w http.ResponseWriter, r *http.Request, call lineartest.Call) {
		h, ok := handlers[call.OperationName]
		if !ok {
			lineartest.WriteJSON(w, http.StatusBadRequest, lineartest.Errors("GRAPHQL_VALIDATION_FAILED", "unexpected operation "+call.OperationName, ""))
			return
		}
		h(w, r, call)
	}
}

func execContext() executors.ExecContext {
	return executors.ExecContext{
		Token:          testAPIKey,
		TokenKind:      executors.TokenKindAPIKey,
		OrganizationID: "org_1",
		SessionID:      "sess_1",
		IdempotencyKey: idempotencyKey,
	}
}

// requireExecError asserts err is a classified failure free of either token
// and returns its classification.
func requireExecError(t *testing.T, err error) *executors.Error {
	t.Helper()
	require.Error(t, err)

	var execErr *executors.Error
	require.ErrorAs(t, err, &execErr)
	for _, token := range []string{testAPIKey, testOAuthToken} {
		require.NotContains(t, err.Error(), token)
		require.NotContains(t, execErr.Code, token)
		require.NotContains(t, execErr.Message, token)
	}
	return execErr
}

// requireOnlyCall asserts the fake saw exactly one request and returns it.
func requireOnlyCall(t *testing.T, bundle *testBundle) lineartest.Call {
	t.Helper()
	calls := bundle.fake.Calls()
	require.Len(t, calls, 1)
	return calls[0]
}

func TestNew(t *testing.T) {
	t.Parallel()

	t.Run("NilConfigUsesDefaults", func(t *testing.T) {
		t.Parallel()

		source, err := linear.New(nil)
		require.NoError(t, err)
		require.Equal(t, linear.SourceID, source.ID())
		require.Equal(t, "linear", source.ID())
	})

	t.Run("WithDefaults", func(t *testing.T) {
		t.Parallel()

		cfg := (&linear.Config{}).WithDefaults()
		require.Equal(t, linear.DefaultBaseURL, cfg.BaseURL)
		require.Equal(t, "https://api.linear.app/graphql", cfg.BaseURL)
		require.NotNil(t, cfg.HTTPClient)
		require.Zero(t, cfg.HTTPClient.Timeout, "deadlines come from ctx")

		client := &http.Client{}
		cfg = (&linear.Config{BaseURL: "http://127.0.0.1:1/graphql", HTTPClient: client}).WithDefaults()
		require.Equal(t, "http://127.0.0.1:1/graphql", cfg.BaseURL)
		require.Same(t, client, cfg.HTTPClient)
	})

	t.Run("InvalidBaseURL", func(t *testing.T) {
		t.Parallel()

		for _, baseURL := range []string{
			"api.linear.app/graphql",
			"ftp://api.linear.app/graphql",
			"https://",
			"https://api.linear.app/graphql?x=1",
			"https://api.linear.app/graphql#frag",
			"://bad",
		} {
			_, err := linear.New(&linear.Config{BaseURL: baseURL})
			require.Error(t, err, baseURL)
		}
	})
}

func TestStableID(t *testing.T) {
	t.Parallel()

	id := linear.StableID(linear.ActionCreateIssue, idempotencyKey)
	parsed, err := uuid.Parse(id)
	require.NoError(t, err)
	require.Equal(t, uuid.Version(4), parsed.Version(), "Linear takes a client-chosen id in UUID v4 format")
	require.Equal(t, uuid.RFC4122, parsed.Variant())

	require.Equal(t, id, linear.StableID(linear.ActionCreateIssue, idempotencyKey), "stable across calls")
	require.NotEqual(t, id, linear.StableID(linear.ActionCreateIssue, "another-invocation"))
	require.NotEqual(t, id, linear.StableID(linear.ActionAddComment, idempotencyKey))
}

func TestSource_ListActions(t *testing.T) {
	t.Parallel()

	setup := func(t *testing.T) map[string]executors.Definition {
		t.Helper()
		source, err := linear.New(nil)
		require.NoError(t, err)
		defs, err := source.ListActions(context.Background(), executors.ExecContext{})
		require.NoError(t, err)
		byID := make(map[string]executors.Definition, len(defs))
		for _, def := range defs {
			byID[def.ID] = def
		}
		require.Len(t, byID, len(defs), "action ids are unique")
		return byID
	}

	t.Run("Definitions", func(t *testing.T) {
		t.Parallel()
		defs := setup(t)

		require.Equal(t, map[string]executors.Tier{
			linear.ActionListIssues:  executors.TierR1,
			linear.ActionGetIssue:    executors.TierR1,
			linear.ActionCreateIssue: executors.TierR2,
			linear.ActionUpdateIssue: executors.TierR2,
			linear.ActionAddComment:  executors.TierR2,
		}, func() map[string]executors.Tier {
			risks := make(map[string]executors.Tier)
			for id, def := range defs {
				risks[id] = def.Tier
			}
			return risks
		}())
		require.Contains(t, defs[linear.ActionListIssues].Description, "end_cursor")
		require.Contains(t, defs[linear.ActionCreateIssue].Description, "teamId")
		require.Contains(t, defs[linear.ActionUpdateIssue].Description, "at least one")
	})

	t.Run("SchemasAreDocumentedAndClosed", func(t *testing.T) {
		t.Parallel()

		for id, def := range setup(t) {
			require.NotEmpty(t, def.Description, id)
			require.True(t, json.Valid(def.Params), id)

			var schema struct {
				Type                 string                     `json:"type"`
				AdditionalProperties *bool                      `json:"additionalProperties"`
				Properties           map[string]json.RawMessage `json:"properties"`
			}
			require.NoError(t, json.Unmarshal(def.Params, &schema), id)
			require.Equal(t, "object", schema.Type, id)
			require.NotNil(t, schema.AdditionalProperties, id)
			require.False(t, *schema.AdditionalProperties, id)
			require.NotEmpty(t, schema.Properties, id)
			for name, raw := range schema.Properties {
				var prop struct {
					Description string `json:"description"`
				}
				require.NoError(t, json.Unmarshal(raw, &prop))
				require.NotEmpty(t, prop.Description, "%s.%s", id, name)
			}
		}
	})

	t.Run("ParamsIsACopy", func(t *testing.T) {
		t.Parallel()

		for id, def := range setup(t) {
			def.Params[0] = 'X'
			require.True(t, json.Valid(setup(t)[id].Params), id)
		}
	})

	t.Run("SchemaAcceptsGoodParams", func(t *testing.T) {
		t.Parallel()
		defs := setup(t)
		validator := executors.NewValidator()

		for action, paramsList := range map[string][]string{
			linear.ActionListIssues: {
				`{}`,
				`{"teamId":"team-eng","projectId":"project-q3","first":50,"after":"cursor"}`,
				`{"first":1}`,
			},
			linear.ActionGetIssue: {`{"issueId":"ENG-1"}`},
			linear.ActionCreateIssue: {
				`{"teamId":"team-eng","title":"Crash on save"}`,
				`{"teamId":"team-eng","title":"t","description":"","assigneeId":"user-ada","stateId":"state-todo",` +
					`"priority":0,"labelIds":["label-bug","label-infra"],"projectId":"project-q3"}`,
				`{"teamId":"team-eng","title":"t","priority":4,"labelIds":[]}`,
			},
			linear.ActionUpdateIssue: {
				`{"issueId":"ENG-1","title":"New"}`,
				`{"issueId":"ENG-1","description":""}`,
				`{"issueId":"ENG-1","assigneeId":"user-ada","stateId":"state-done","priority":2}`,
			},
			linear.ActionAddComment: {`{"issueId":"abc","body":"Looks good"}`},
		} {
			for _, params := range paramsList {
				fieldErrs, err := validator.Validate(defs[action].Params, json.RawMessage(params))
				require.NoError(t, err)
				require.Empty(t, fieldErrs, "%s %s", action, params)
			}
		}
	})

	t.Run("SchemaRejectsBadParams", func(t *testing.T) {
		t.Parallel()
		defs := setup(t)
		validator := executors.NewValidator()

		for action, cases := range map[string]map[string][]string{
			linear.ActionListIssues: {
				`{"first":0}`:                      {"first"},
				`{"first":51}`:                     {"first"},
				`{"first":2.5}`:                    {"first"},
				`{"first":"10"}`:                   {"first"},
				`{"teamId":"","projectId":5}`:      {"projectId", "teamId"},
				`{"after":""}`:                     {"after"},
				`{"orderBy":"createdAt","last":3}`: {"last", "orderBy"},
				`[]`:                               {""},
			},
			linear.ActionGetIssue: {
				`{}`:                        {"issueId"},
				`{"issueId":""}`:            {"issueId"},
				`{"issueId":1}`:             {"issueId"},
				`{"issueId":"a","extra":1}`: {"extra"},
			},
			linear.ActionCreateIssue: {
				`{}`:                       {"teamId", "title"},
				`{"teamId":"team-eng"}`:    {"title"},
				`{"title":"t"}`:            {"teamId"},
				`{"teamId":"","title":""}`: {"teamId", "title"},
				`{"teamId":"t","title":"t","priority":5}`:         {"priority"},
				`{"teamId":"t","title":"t","priority":-1}`:        {"priority"},
				`{"teamId":"t","title":"t","labelIds":"b"}`:       {"labelIds"},
				`{"teamId":"t","title":"t","labelIds":[1]}`:       {"labelIds/0"},
				`{"teamId":"t","title":"t","labelIds":["a","a"]}`: {"labelIds"},
				`{"teamId":"t","title":"t","cycleId":"c"}`:        {"cycleId"},
				`{"teamId":"t","title":"t","id":"x"}`:             {"id"},
			},
			linear.ActionUpdateIssue: {
				`{}`:                                 {"", "issueId"},
				`{"issueId":"ENG-1"}`:                {""},
				`{"title":"t"}`:                      {"", "issueId"},
				`{"issueId":"ENG-1","title":""}`:     {"title"},
				`{"issueId":"ENG-1","priority":9}`:   {"priority"},
				`{"issueId":"ENG-1","labelIds":[]}`:  {"labelIds"},
				`{"issueId":"ENG-1","stateId":null}`: {"stateId"},
			},
			linear.ActionAddComment: {
				`{}`:                                  {"body", "issueId"},
				`{"issueId":"a"}`:                     {"body"},
				`{"issueId":"a","body":""}`:           {"body"},
				`{"issueId":"a","body":"b","id":"c"}`: {"id"},
			},
		} {
			for params, wantFields := range cases {
				fieldErrs, err := validator.Validate(defs[action].Params, json.RawMessage(params))
				require.NoError(t, err)
				fields := make([]string, len(fieldErrs))
				for i, fe := range fieldErrs {
					fields[i] = fe.Field
					require.NotEmpty(t, fe.Message)
				}
				require.Equal(t, wantFields, fields, "%s %s", action, params)
			}
		}
	})
}

func TestSource_Execute(t *testing.T) {
	t.Parallel()

	ctx := context.Background()

	t.Run("ListIssues", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		first := bundle.fake.SeedIssue("team-eng", "", "First")
		second := bundle.fake.SeedIssue("team-eng", "project-q3", "Second")
		bundle.fake.SeedIssue("team-ops", "", "Elsewhere")

		res, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{"teamId":"team-eng"}`), execContext())
		require.NoError(t, err)
		require.Empty(t, res.ProviderRef)
		require.False(t, res.Conflict)

		var out struct {
			Issues []struct {
				ID         string `json:"id"`
				Identifier string `json:"identifier"`
				Title      string `json:"title"`
				URL        string `json:"url"`
				State      struct {
					Name string `json:"name"`
				} `json:"state"`
			} `json:"issues"`
			PageInfo struct {
				HasNextPage *bool   `json:"has_next_page"`
				EndCursor   *string `json:"end_cursor"`
			} `json:"page_info"`
		}
		require.NoError(t, json.Unmarshal(res.Data, &out))
		require.Len(t, out.Issues, 2)
		require.Equal(t, first, out.Issues[0].ID)
		require.Equal(t, "ENG-1", out.Issues[0].Identifier)
		require.Equal(t, "Todo", out.Issues[0].State.Name)
		require.Equal(t, "https://linear.app/acme/issue/ENG-1", out.Issues[0].URL)
		require.Equal(t, second, out.Issues[1].ID)
		require.NotNil(t, out.PageInfo.HasNextPage)
		require.False(t, *out.PageInfo.HasNextPage)
		require.Equal(t, second, *out.PageInfo.EndCursor)

		call := requireOnlyCall(t, bundle)
		require.Equal(t, "ListIssues", call.OperationName)
		require.Contains(t, call.Query, "query ListIssues($first: Int!, $after: String, $filter: IssueFilter)")
		require.Contains(t, call.Query, "issues(first: $first, after: $after, filter: $filter)")
		require.Contains(t, call.Query, "pageInfo { hasNextPage endCursor }")
		for _, field := range []string{"id", "identifier", "title", "state { name }", "priority", "url", "assignee { id name }", "createdAt", "updatedAt"} {
			require.Contains(t, call.Query, field)
		}
		require.JSONEq(t, `{"first":25,"filter":{"team":{"id":{"eq":"team-eng"}}}}`, string(call.Variables))
	})

	t.Run("ListIssuesPaginates", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		var ids []string
		for i := range 5 {
			ids = append(ids, bundle.fake.SeedIssue("team-eng", "", "Issue "+strconv.Itoa(i)))
		}

		type page struct {
			Issues   []struct{ ID string } `json:"issues"`
			PageInfo struct {
				HasNextPage bool    `json:"has_next_page"`
				EndCursor   *string `json:"end_cursor"`
			} `json:"page_info"`
		}
		list := func(params string) page {
			res, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(params), execContext())
			require.NoError(t, err)
			var p page
			require.NoError(t, json.Unmarshal(res.Data, &p))
			return p
		}

		p1 := list(`{"first":3}`)
		require.Len(t, p1.Issues, 3)
		require.True(t, p1.PageInfo.HasNextPage)
		require.Equal(t, ids[2], *p1.PageInfo.EndCursor)

		p2 := list(`{"first":3,"after":"` + *p1.PageInfo.EndCursor + `"}`)
		require.Len(t, p2.Issues, 2)
		require.Equal(t, ids[3], p2.Issues[0].ID)
		require.Equal(t, ids[4], p2.Issues[1].ID)
		require.False(t, p2.PageInfo.HasNextPage)

		calls := bundle.fake.Calls()
		require.Len(t, calls, 2)
		require.JSONEq(t, `{"first":3}`, string(calls[0].Variables))
		require.JSONEq(t, `{"first":3,"after":"`+ids[2]+`"}`, string(calls[1].Variables))
	})

	t.Run("ListIssuesCapsFirst", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		for i := range 60 {
			bundle.fake.SeedIssue("team-eng", "", "Issue "+strconv.Itoa(i))
		}

		// The schema allows at most 50; a caller that skips validation still
		// gets no more.
		res, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{"first":500}`), execContext())
		require.NoError(t, err)

		var out struct {
			Issues   []json.RawMessage `json:"issues"`
			PageInfo struct {
				HasNextPage bool `json:"has_next_page"`
			} `json:"page_info"`
		}
		require.NoError(t, json.Unmarshal(res.Data, &out))
		require.Len(t, out.Issues, 50)
		require.True(t, out.PageInfo.HasNextPage)
		require.JSONEq(t, `{"first":50}`, string(requireOnlyCall(t, bundle).Variables))
	})

	t.Run("ListIssuesProjectFilterAndEmptyPage", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.fake.SeedIssue("team-eng", "", "Not in a project")

		res, err := bundle.source.Execute(ctx, linear.ActionListIssues,
			json.RawMessage(`{"teamId":"team-eng","projectId":"project-q3","first":10}`), execContext())
		require.NoError(t, err)
		require.JSONEq(t, `{"issues":[],"page_info":{"has_next_page":false,"end_cursor":null}}`, string(res.Data))
		require.JSONEq(t,
			`{"first":10,"filter":{"team":{"id":{"eq":"team-eng"}},"project":{"id":{"eq":"project-q3"}}}}`,
			string(requireOnlyCall(t, bundle).Variables))
	})

	t.Run("GetIssue", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		id := bundle.fake.SeedIssue("team-eng", "project-q3", "Crash on save")

		for _, ref := range []string{id, "ENG-1"} {
			res, err := bundle.source.Execute(ctx, linear.ActionGetIssue, json.RawMessage(`{"issueId":"`+ref+`"}`), execContext())
			require.NoError(t, err)
			require.Equal(t, id, res.ProviderRef)
			require.False(t, res.Conflict)

			var issue struct {
				ID, Identifier, Title string
				Team                  struct{ Key string }
				Project               struct{ Name string }
			}
			require.NoError(t, json.Unmarshal(res.Data, &issue))
			require.Equal(t, id, issue.ID)
			require.Equal(t, "ENG-1", issue.Identifier)
			require.Equal(t, "Crash on save", issue.Title)
			require.Equal(t, "ENG", issue.Team.Key)
			require.Equal(t, "Q3 launch", issue.Project.Name)
		}

		calls := bundle.fake.Calls()
		require.Len(t, calls, 2)
		require.Equal(t, "GetIssue", calls[0].OperationName)
		require.Contains(t, calls[0].Query, "query GetIssue($id: String!)")
		require.Contains(t, calls[0].Query, "issue(id: $id)")
		require.JSONEq(t, `{"id":"`+id+`"}`, string(calls[0].Variables))
		require.JSONEq(t, `{"id":"ENG-1"}`, string(calls[1].Variables))
	})

	t.Run("GetIssueNotFound", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		_, err := bundle.source.Execute(ctx, linear.ActionGetIssue, json.RawMessage(`{"issueId":"ENG-404"}`), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "not_found", execErr.Code)
		require.False(t, execErr.Retryable)
		require.Contains(t, execErr.Message, "Could not find referenced Issue.")
	})

	t.Run("GetIssueNull", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.fake.AnswerWith(answer(http.StatusOK, `{"data":{"issue":null}}`))

		_, err := bundle.source.Execute(ctx, linear.ActionGetIssue, json.RawMessage(`{"issueId":"ENG-404"}`), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "not_found", execErr.Code)
		require.False(t, execErr.Retryable)
	})

	t.Run("CreateIssue", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		params := `{"teamId":"team-eng","title":"Crash on save","description":"Steps:\n1. Save","assigneeId":"user-ada",` +
			`"stateId":"state-started","priority":2,"labelIds":["label-bug"],"projectId":"project-q3"}`
		res, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(params), execContext())
		require.NoError(t, err)

		wantID := linear.StableID(linear.ActionCreateIssue, idempotencyKey)
		require.Equal(t, wantID, res.ProviderRef)
		require.False(t, res.Conflict)

		var issue struct {
			ID, Identifier, Title, URL string
			Priority                   int
			Assignee                   struct{ Name string }
			State                      struct{ Name string }
			Labels                     struct{ Nodes []struct{ Name string } }
		}
		require.NoError(t, json.Unmarshal(res.Data, &issue))
		require.Equal(t, wantID, issue.ID)
		require.Equal(t, "ENG-1", issue.Identifier)
		require.Equal(t, "Crash on save", issue.Title)
		require.Equal(t, "https://linear.app/acme/issue/ENG-1", issue.URL)
		require.Equal(t, 2, issue.Priority)
		require.Equal(t, "Ada Lovelace", issue.Assignee.Name)
		require.Equal(t, "In Progress", issue.State.Name)
		require.Equal(t, "Bug", issue.Labels.Nodes[0].Name)

		call := requireOnlyCall(t, bundle)
		require.Equal(t, "CreateIssue", call.OperationName)
		require.Contains(t, call.Query, "mutation CreateIssue($input: IssueCreateInput!)")
		require.Contains(t, call.Query, "issueCreate(input: $input)")
		require.Contains(t, call.Query, "success")
		require.JSONEq(t, `{"input":{"id":"`+wantID+`","teamId":"team-eng","title":"Crash on save",`+
			`"description":"Steps:\n1. Save","assigneeId":"user-ada","stateId":"state-started","priority":2,`+
			`"labelIds":["label-bug"],"projectId":"project-q3"}}`, string(call.Variables))
		require.Equal(t, 1, bundle.fake.IssueCount())
	})

	t.Run("CreateIssueSendsPriorityZero", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		_, err := bundle.source.Execute(ctx, linear.ActionCreateIssue,
			json.RawMessage(`{"teamId":"team-eng","title":"t","priority":0}`), execContext())
		require.NoError(t, err)
		require.JSONEq(t,
			`{"input":{"id":"`+linear.StableID(linear.ActionCreateIssue, idempotencyKey)+`","teamId":"team-eng","title":"t","priority":0}}`,
			string(requireOnlyCall(t, bundle).Variables))
	})

	t.Run("CreateIssueWithoutIdempotencyKey", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		ec := execContext()
		ec.IdempotencyKey = ""
		res, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(`{"teamId":"team-eng","title":"t"}`), ec)
		require.NoError(t, err)
		require.NotEmpty(t, res.ProviderRef)

		call := requireOnlyCall(t, bundle)
		require.JSONEq(t, `{"input":{"teamId":"team-eng","title":"t"}}`, string(call.Variables))
		require.NotContains(t, call.Header, "X-Outboxd-Idempotency-Key")
	})

	t.Run("CreateIssueRetriedAfterLostAnswer", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		params := json.RawMessage(`{"teamId":"team-eng","title":"Crash on save"}`)

		// Linear creates the issue, but its answer never arrives.
		bundle.fake.HangAfterNextMutation()
		attemptCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err := bundle.source.Execute(attemptCtx, linear.ActionCreateIssue, params, execContext())
		cancel()
		execErr := requireExecError(t, err)
		require.Equal(t, "timeout", execErr.Code)
		require.True(t, execErr.Retryable)
		require.Equal(t, 1, bundle.fake.IssueCount())

		// The worker retries the same invocation.
		res, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, params, execContext())
		require.NoError(t, err)
		require.True(t, res.Conflict)

		wantID := linear.StableID(linear.ActionCreateIssue, idempotencyKey)
		require.Equal(t, wantID, res.ProviderRef)
		var issue struct{ ID, Identifier, Title, URL string }
		require.NoError(t, json.Unmarshal(res.Data, &issue))
		require.Equal(t, wantID, issue.ID)
		require.Equal(t, "ENG-1", issue.Identifier)
		require.Equal(t, "Crash on save", issue.Title)
		require.NotEmpty(t, issue.URL)

		require.Equal(t, 1, bundle.fake.IssueCount(), "exactly one issue")
		calls := bundle.fake.Calls()
		require.Len(t, calls, 3)
		require.Equal(t, []string{"CreateIssue", "CreateIssue", "GetIssue"},
			[]string{calls[0].OperationName, calls[1].OperationName, calls[2].OperationName})
		require.JSONEq(t, string(calls[0].Variables), string(calls[1].Variables), "the retry sends the same id")
		require.JSONEq(t, `{"id":"`+wantID+`"}`, string(calls[2].Variables))
	})

	t.Run("CreateIssueDuplicateWordings", func(t *testing.T) {
		t.Parallel()

		for _, msg := range []string{
			"Entity already exists",
			"An issue with this ID ALREADY EXISTS",
			`duplicate key value violates unique constraint "issue_pkey"`,
			"Duplicate entity",
		} {
			bundle := setup(t)
			bundle.fake.SetDuplicateMessage(msg)
			params := json.RawMessage(`{"teamId":"team-eng","title":"t"}`)

			first, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, params, execContext())
			require.NoError(t, err)
			require.False(t, first.Conflict)

			second, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, params, execContext())
			require.NoError(t, err, msg)
			require.True(t, second.Conflict, msg)
			require.Equal(t, first.ProviderRef, second.ProviderRef)
			require.JSONEq(t, string(first.Data), string(second.Data))
			require.Equal(t, 1, bundle.fake.IssueCount())
		}
	})

	t.Run("CreateIssueDuplicateOfSomethingElse", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.fake.AnswerWith(byOperation(map[string]lineartest.Handler{
			"CreateIssue": answer(http.StatusOK, `{"errors":[{"message":"Argument Validation Error",`+
				`"extensions":{"code":"INVALID_INPUT","userPresentableMessage":"labelIds contains duplicate values"}}],"data":null}`),
			"GetIssue": answer(http.StatusOK, `{"errors":[{"message":"Entity not found: Issue",`+
				`"extensions":{"code":"INVALID_INPUT","userPresentableMessage":"Could not find referenced Issue."}}],"data":null}`),
		}))

		_, err := bundle.source.Execute(ctx, linear.ActionCreateIssue,
			json.RawMessage(`{"teamId":"team-eng","title":"t","labelIds":["a"]}`), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "already_exists", execErr.Code)
		require.Contains(t, execErr.Message, "labelIds contains duplicate values")
		require.False(t, execErr.Retryable)
		require.Len(t, bundle.fake.Calls(), 2)
	})

	t.Run("CreateIssueConflictLookupFails", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.fake.AnswerWith(byOperation(map[string]lineartest.Handler{
			"CreateIssue": answer(http.StatusOK, `{"errors":[{"message":"Entity already exists","extensions":{"code":"INVALID_INPUT"}}],"data":null}`),
			"GetIssue":    answer(http.StatusBadGateway, `<html>bad gateway</html>`),
		}))

		_, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(`{"teamId":"team-eng","title":"t"}`), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "http_502", execErr.Code)
		require.True(t, execErr.Retryable, "the retry will find the issue")
	})

	t.Run("CreateIssueWithFieldErrors", func(t *testing.T) {
		t.Parallel()
		wantID := linear.StableID(linear.ActionCreateIssue, idempotencyKey)

		// The issue was created; only a field of the answer could not be
		// read back. It is the action's result, not a failure.
		bundle := setup(t)
		bundle.fake.AnswerWith(answer(http.StatusOK, `{"data":{"issueCreate":{"success":true,"issue":{"id":"`+wantID+`",`+
			`"identifier":"ENG-7","assignee":null}}},"errors":[{"message":"Entity not found: User",`+
			`"path":["issueCreate","issue","assignee"],"extensions":{"code":"INVALID_INPUT"}}]}`))
		res, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(`{"teamId":"team-eng","title":"t"}`), execContext())
		require.NoError(t, err)
		require.Equal(t, wantID, res.ProviderRef)
		require.Contains(t, string(res.Data), "ENG-7")

		// An error about the mutation itself is still its failure.
		bundle = setup(t)
		bundle.fake.AnswerWith(answer(http.StatusOK, `{"data":{"issueCreate":null},"errors":[{"message":"Rate limit exceeded",`+
			`"path":["issueCreate"],"extensions":{"code":"RATELIMITED"}}]}`))
		_, err = bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(`{"teamId":"team-eng","title":"t"}`), execContext())
		require.Equal(t, "ratelimited", requireExecError(t, err).Code)
	})

	t.Run("CreateIssueWithoutSuccess", func(t *testing.T) {
		t.Parallel()

		for _, body := range []string{
			`{"data":{"issueCreate":{"success":false,"issue":null}}}`,
			`{"data":{"issueCreate":null}}`,
			`{"data":null}`,
		} {
			bundle := setup(t)
			bundle.fake.AnswerWith(answer(http.StatusOK, body))

			_, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(`{"teamId":"team-eng","title":"t"}`), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, "mutation_failed", execErr.Code, body)
			require.False(t, execErr.Retryable, body)
		}
	})

	t.Run("CreateIssueLongDescription", func(t *testing.T) {
		t.Parallel()
		// The answer holds the description: a long one is no failure, and
		// a retry finds the issue as it is.
		bundle := setup(t)
		params, err := json.Marshal(map[string]string{"teamId": "team-eng", "title": "t", "description": strings.Repeat("log line\n", 130_000)})
		require.NoError(t, err)

		res, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, params, execContext())
		require.NoError(t, err)
		require.False(t, res.Conflict)
		again, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, params, execContext())
		require.NoError(t, err)
		require.True(t, again.Conflict)
		require.Equal(t, res.ProviderRef, again.ProviderRef)
		require.Equal(t, 1, bundle.fake.IssueCount())
	})

	t.Run("SucceededWithoutObject", func(t *testing.T) {
		t.Parallel()
		// Linear made the change and said so (success: true), but gave no
		// object back: the action succeeded, and a retry finds the same
		// object instead of making a second.
		issueID := linear.StableID(linear.ActionCreateIssue, idempotencyKey)
		commentID := linear.StableID(linear.ActionAddComment, idempotencyKey)
		for _, reads := range []bool{false, true} {
			bundle := setup(t)
			bundle.fake.WithholdObjects(reads)

			res, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(`{"teamId":"team-eng","title":"t"}`), execContext())
			require.NoError(t, err, "reads withheld: %v", reads)
			require.Equal(t, issueID, res.ProviderRef)
			require.False(t, res.Conflict)
			if reads {
				require.JSONEq(t, `{"id":"`+issueID+`"}`, string(res.Data))
			} else {
				require.Contains(t, string(res.Data), `"identifier":"ENG-1"`, "read back by its id")
			}
			if !reads {
				again, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(`{"teamId":"team-eng","title":"t"}`), execContext())
				require.NoError(t, err)
				require.True(t, again.Conflict)
				require.Equal(t, issueID, again.ProviderRef)
			}
			require.Equal(t, 1, bundle.fake.IssueCount())

			res, err = bundle.source.Execute(ctx, linear.ActionUpdateIssue, json.RawMessage(`{"issueId":"ENG-1","title":"u"}`), execContext())
			require.NoError(t, err)
			require.Equal(t, "u", bundle.fake.Issue(issueID).Title)
			if reads {
				require.Equal(t, "ENG-1", res.ProviderRef)
			} else {
				require.Equal(t, issueID, res.ProviderRef)
			}

			res, err = bundle.source.Execute(ctx, linear.ActionAddComment, json.RawMessage(`{"issueId":"`+issueID+`","body":"b"}`), execContext())
			require.NoError(t, err)
			require.Equal(t, commentID, res.ProviderRef)
			_, ok := bundle.fake.Comment(commentID)
			require.True(t, ok)
		}
	})

	t.Run("RetriedAfterLostAnswerUnreadable", func(t *testing.T) {
		t.Parallel()
		// The token may create what it cannot read back. Linear makes the
		// issue (and the comment), its answer is lost, and the retry is
		// refused as a duplicate of the first attempt's id while the read
		// finds nothing: Linear says the object exists, so the retry
		// completes as a conflict with the id alone, not a failure the
		// agent would answer with a second object.
		issueID := linear.StableID(linear.ActionCreateIssue, idempotencyKey)
		commentID := linear.StableID(linear.ActionAddComment, idempotencyKey)
		bundle := setup(t)
		bundle.fake.WithholdObjects(true)
		retry := execContext()
		retry.Retry = true
		for _, c := range []struct {
			action, params, id string
		}{
			{linear.ActionCreateIssue, `{"teamId":"team-eng","title":"t"}`, issueID},
			{linear.ActionAddComment, `{"issueId":"` + issueID + `","body":"b"}`, commentID},
		} {
			bundle.fake.HangAfterNextMutation()
			attemptCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			_, err := bundle.source.Execute(attemptCtx, c.action, json.RawMessage(c.params), execContext())
			cancel()
			require.Equal(t, "timeout", requireExecError(t, err).Code, c.action)

			res, err := bundle.source.Execute(ctx, c.action, json.RawMessage(c.params), retry)
			require.NoError(t, err, c.action)
			require.True(t, res.Conflict, c.action)
			require.Equal(t, c.id, res.ProviderRef)
			require.JSONEq(t, `{"id":"`+c.id+`"}`, string(res.Data))
		}
		require.Equal(t, 1, bundle.fake.IssueCount())
		_, ok := bundle.fake.Comment(commentID)
		require.True(t, ok)

		// On a first attempt the id cannot be taken by this invocation:
		// such a refusal with nothing to read stays the failure it is.
		fresh := execContext()
		fresh.IdempotencyKey = "another-invocation"
		bundle.fake.AnswerWith(byOperation(map[string]lineartest.Handler{
			"CreateIssue": answer(http.StatusOK, `{"errors":[{"message":"Entity already exists","extensions":{"code":"INVALID_INPUT"}}],"data":null}`),
			"GetIssue": answer(http.StatusOK, `{"errors":[{"message":"Entity not found: Issue",`+
				`"extensions":{"code":"INVALID_INPUT","userPresentableMessage":"Could not find referenced Issue."}}],"data":null}`),
		}))
		_, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(`{"teamId":"team-eng","title":"t"}`), fresh)
		require.Equal(t, "already_exists", requireExecError(t, err).Code)
	})

	t.Run("CreateIssueUnknownTeam", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		_, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(`{"teamId":"team-nope","title":"t"}`), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "not_found", execErr.Code)
		require.Contains(t, execErr.Message, "Team")
		require.False(t, execErr.Retryable)
		require.Zero(t, bundle.fake.IssueCount())
	})

	t.Run("UpdateIssue", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		id := bundle.fake.SeedIssue("team-eng", "", "Old title")

		params := `{"issueId":"ENG-1","title":"New title","description":"","assigneeId":"user-alan","stateId":"state-done","priority":1}`
		res, err := bundle.source.Execute(ctx, linear.ActionUpdateIssue, json.RawMessage(params), execContext())
		require.NoError(t, err)
		require.Equal(t, id, res.ProviderRef)
		require.False(t, res.Conflict)

		var issue struct {
			Title       string
			Description *string
			State       struct{ Name string }
		}
		require.NoError(t, json.Unmarshal(res.Data, &issue))
		require.Equal(t, "New title", issue.Title)
		require.Equal(t, "Done", issue.State.Name)

		stored := bundle.fake.Issue(id)
		require.Equal(t, "New title", stored.Title)
		require.NotNil(t, stored.Description)
		require.Empty(t, *stored.Description, "an empty description clears it")
		require.Equal(t, "user-alan", stored.AssigneeID)
		require.Equal(t, 1, stored.Priority)

		call := requireOnlyCall(t, bundle)
		require.Equal(t, "UpdateIssue", call.OperationName)
		require.Contains(t, call.Query, "mutation UpdateIssue($id: String!, $input: IssueUpdateInput!)")
		require.Contains(t, call.Query, "issueUpdate(id: $id, input: $input)")
		require.JSONEq(t, `{"id":"ENG-1","input":{"title":"New title","description":"","assigneeId":"user-alan",`+
			`"stateId":"state-done","priority":1}}`, string(call.Variables))
	})

	t.Run("UpdateIssueSendsOnlySetFields", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		id := bundle.fake.SeedIssue("team-eng", "", "Keep me")

		_, err := bundle.source.Execute(ctx, linear.ActionUpdateIssue, json.RawMessage(`{"issueId":"`+id+`","priority":0}`), execContext())
		require.NoError(t, err)
		require.JSONEq(t, `{"id":"`+id+`","input":{"priority":0}}`, string(requireOnlyCall(t, bundle).Variables))
		require.Equal(t, "Keep me", bundle.fake.Issue(id).Title)
	})

	t.Run("UpdateIssueNotFound", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		_, err := bundle.source.Execute(ctx, linear.ActionUpdateIssue, json.RawMessage(`{"issueId":"ENG-9","title":"t"}`), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "not_found", execErr.Code)
		require.False(t, execErr.Retryable)
	})

	t.Run("UpdateIssueNothingToChange", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		_, err := bundle.source.Execute(ctx, linear.ActionUpdateIssue, json.RawMessage(`{"issueId":"ENG-1"}`), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "invalid_params", execErr.Code)
		require.Contains(t, execErr.Message, "at least one")
		require.False(t, execErr.Retryable)
		require.Empty(t, bundle.fake.Calls())
	})

	t.Run("AddComment", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		issueID := bundle.fake.SeedIssue("team-eng", "", "Crash on save")

		params := `{"issueId":"` + issueID + `","body":"Fixed in **#42**"}`
		res, err := bundle.source.Execute(ctx, linear.ActionAddComment, json.RawMessage(params), execContext())
		require.NoError(t, err)

		wantID := linear.StableID(linear.ActionAddComment, idempotencyKey)
		require.Equal(t, wantID, res.ProviderRef)
		require.False(t, res.Conflict)
		var comment struct {
			ID, Body, URL string
			Issue         struct{ ID, Identifier string }
		}
		require.NoError(t, json.Unmarshal(res.Data, &comment))
		require.Equal(t, wantID, comment.ID)
		require.Equal(t, "Fixed in **#42**", comment.Body)
		require.NotEmpty(t, comment.URL)
		require.Equal(t, "ENG-1", comment.Issue.Identifier)

		call := requireOnlyCall(t, bundle)
		require.Equal(t, "AddComment", call.OperationName)
		require.Contains(t, call.Query, "mutation AddComment($input: CommentCreateInput!)")
		require.Contains(t, call.Query, "commentCreate(input: $input)")
		require.JSONEq(t, `{"input":{"id":"`+wantID+`","issueId":"`+issueID+`","body":"Fixed in **#42**"}}`, string(call.Variables))
		require.Equal(t, 1, bundle.fake.CommentCount())
	})

	t.Run("AddCommentRetriedAfterLostAnswer", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		issueID := bundle.fake.SeedIssue("team-eng", "", "Crash on save")
		params := json.RawMessage(`{"issueId":"` + issueID + `","body":"On it"}`)

		bundle.fake.HangAfterNextMutation()
		attemptCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err := bundle.source.Execute(attemptCtx, linear.ActionAddComment, params, execContext())
		cancel()
		execErr := requireExecError(t, err)
		require.True(t, execErr.Retryable)
		require.Equal(t, 1, bundle.fake.CommentCount())

		res, err := bundle.source.Execute(ctx, linear.ActionAddComment, params, execContext())
		require.NoError(t, err)
		require.True(t, res.Conflict)
		wantID := linear.StableID(linear.ActionAddComment, idempotencyKey)
		require.Equal(t, wantID, res.ProviderRef)
		var comment struct{ ID, Body string }
		require.NoError(t, json.Unmarshal(res.Data, &comment))
		require.Equal(t, wantID, comment.ID)
		require.Equal(t, "On it", comment.Body)

		require.Equal(t, 1, bundle.fake.CommentCount(), "exactly one comment")
		calls := bundle.fake.Calls()
		require.Len(t, calls, 3)
		require.Equal(t, "GetComment", calls[2].OperationName)
		require.Contains(t, calls[2].Query, "comment(id: $id)")
		require.JSONEq(t, `{"id":"`+wantID+`"}`, string(calls[2].Variables))
	})

	t.Run("AuthorizationHeader", func(t *testing.T) {
		t.Parallel()

		for _, tc := range []struct {
			name, token, kind, want string
		}{
			{"APIKey", testAPIKey, executors.TokenKindAPIKey, testAPIKey},
			{"OAuth", testOAuthToken, executors.TokenKindOAuth, "Bearer " + testOAuthToken},
			{"UnsetKindAPIKeyPrefix", testAPIKey, "", testAPIKey},
			{"UnsetKindOtherToken", testOAuthToken, "", "Bearer " + testOAuthToken},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				bundle := setup(t)

				ec := execContext()
				ec.Token, ec.TokenKind = tc.token, tc.kind
				_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), ec)
				require.NoError(t, err)
				require.Equal(t, tc.want, requireOnlyCall(t, bundle).Header.Get("Authorization"))
			})
		}
	})

	t.Run("WrongAuthorizationForm", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		// An OAuth token recorded as an API key is sent as it is and
		// rejected, which the worker handles as a credential to refresh.
		ec := execContext()
		ec.Token, ec.TokenKind = testOAuthToken, executors.TokenKindAPIKey
		_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), ec)
		execErr := requireExecError(t, err)
		require.Equal(t, executors.CodeUnauthorized, execErr.Code)
		require.False(t, execErr.Retryable)
		require.Equal(t, testOAuthToken, requireOnlyCall(t, bundle).Header.Get("Authorization"))
	})

	t.Run("UnknownTokenKind", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		ec := execContext()
		ec.TokenKind = "basic"
		_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), ec)
		execErr := requireExecError(t, err)
		require.Equal(t, "invalid_token_kind", execErr.Code)
		require.False(t, execErr.Retryable)
		require.Empty(t, bundle.fake.Calls())
	})

	t.Run("RequestHeaders", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
		require.NoError(t, err)

		header := requireOnlyCall(t, bundle).Header
		require.Equal(t, "application/json", header.Get("Content-Type"))
		require.Equal(t, idempotencyKey, header.Get("X-Outboxd-Idempotency-Key"))
		require.NotContains(t, header, "Idempotency-Key", "net/http would resend POSTs on its own")
	})

	t.Run("RequestPath", func(t *testing.T) {
		t.Parallel()
		var gotPath, gotMethod string
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			gotPath, gotMethod = r.URL.Path, r.Method
			lineartest.WriteJSON(w, http.StatusOK, lineartest.Data("issue", map[string]any{"id": "i1"}))
		}))
		t.Cleanup(server.Close)

		cfg := (&linear.Config{BaseURL: server.URL + "/graphql"}).WithDefaults()
		t.Cleanup(cfg.HTTPClient.CloseIdleConnections)
		source, err := linear.New(cfg)
		require.NoError(t, err)

		res, err := source.Execute(ctx, linear.ActionGetIssue, json.RawMessage(`{"issueId":"i1"}`), execContext())
		require.NoError(t, err)
		require.Equal(t, "i1", res.ProviderRef)
		require.Equal(t, "/graphql", gotPath)
		require.Equal(t, http.MethodPost, gotMethod)
	})

	t.Run("UnauthorizedHTTP", func(t *testing.T) {
		t.Parallel()

		for _, body := range []string{
			``,
			`{"errors":[{"message":"Authentication required, not authenticated","extensions":{"code":"AUTHENTICATION_ERROR"}}]}`,
		} {
			bundle := setup(t)
			bundle.fake.AnswerWith(answer(http.StatusUnauthorized, body))

			_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, executors.CodeUnauthorized, execErr.Code)
			require.False(t, execErr.Retryable)
			require.Zero(t, execErr.RetryAfter)
		}
	})

	t.Run("AuthenticationErrorInGraphQL", func(t *testing.T) {
		t.Parallel()

		for _, status := range []int{http.StatusOK, http.StatusBadRequest} {
			bundle := setup(t)
			bundle.fake.AnswerWith(answer(status, `{"errors":[{"message":"Authentication required, not authenticated",`+
				`"extensions":{"type":"authentication error","code":"AUTHENTICATION_ERROR","statusCode":401,"userError":true,`+
				`"userPresentableMessage":"You need to authenticate to access this operation."}}],"data":null}`))

			_, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(`{"teamId":"team-eng","title":"t"}`), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, executors.CodeUnauthorized, execErr.Code, status)
			require.False(t, execErr.Retryable)
			require.Contains(t, execErr.Message, "You need to authenticate")
		}
	})

	t.Run("AuthenticationErrorByTypeOnly", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.fake.AnswerWith(answer(http.StatusOK, `{"errors":[{"message":"not authenticated","extensions":{"type":"authentication error"}}]}`))

		_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
		require.Equal(t, executors.CodeUnauthorized, requireExecError(t, err).Code)
	})

	t.Run("Forbidden", func(t *testing.T) {
		t.Parallel()

		for status, body := range map[int]string{
			http.StatusForbidden: `forbidden`,
			http.StatusOK: `{"errors":[{"message":"Forbidden","extensions":{"type":"forbidden","code":"FORBIDDEN",` +
				`"userPresentableMessage":"You don't have access to this team."}}],"data":null}`,
		} {
			bundle := setup(t)
			bundle.fake.AnswerWith(answer(status, body))

			_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, "forbidden", execErr.Code, status)
			require.False(t, execErr.Retryable, status)
		}
	})

	t.Run("RateLimitedHTTP", func(t *testing.T) {
		t.Parallel()

		for retryAfter, want := range map[string]time.Duration{
			"7":         7 * time.Second,
			"":          30 * time.Second,
			"soon":      30 * time.Second,
			"0":         30 * time.Second,
			"-5":        30 * time.Second,
			"999999999": time.Hour,
		} {
			bundle := setup(t)
			bundle.fake.AnswerWith(answer(http.StatusTooManyRequests, `{}`, "Retry-After", retryAfter))

			_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, "ratelimited", execErr.Code)
			require.True(t, execErr.Retryable)
			require.Equal(t, want, execErr.RetryAfter, "Retry-After %q", retryAfter)
		}
	})

	t.Run("RateLimitedUntilReset", func(t *testing.T) {
		t.Parallel()

		for _, header := range []string{"X-RateLimit-Requests-Reset", "X-RateLimit-Complexity-Reset"} {
			bundle := setup(t)
			reset := time.Now().Add(20 * time.Second).UnixMilli()
			bundle.fake.AnswerWith(answer(http.StatusTooManyRequests, `{}`, header, strconv.FormatInt(reset, 10)))

			_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
			execErr := requireExecError(t, err)
			require.True(t, execErr.Retryable)
			require.Greater(t, execErr.RetryAfter, 15*time.Second, header)
			require.LessOrEqual(t, execErr.RetryAfter, 20*time.Second, header)
		}

		// Retry-After wins; a reset in the past is not usable.
		bundle := setup(t)
		past := strconv.FormatInt(time.Now().Add(-time.Minute).UnixMilli(), 10)
		bundle.fake.AnswerWith(answer(http.StatusTooManyRequests, `{}`, "Retry-After", "3", "X-RateLimit-Requests-Reset", past))
		_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
		require.Equal(t, 3*time.Second, requireExecError(t, err).RetryAfter)

		bundle = setup(t)
		bundle.fake.AnswerWith(answer(http.StatusTooManyRequests, `{}`, "X-RateLimit-Requests-Reset", past))
		_, err = bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
		require.Equal(t, 30*time.Second, requireExecError(t, err).RetryAfter)
	})

	t.Run("RateLimitedGraphQL", func(t *testing.T) {
		t.Parallel()

		for _, status := range []int{http.StatusOK, http.StatusBadRequest} {
			bundle := setup(t)
			reset := strconv.FormatInt(time.Now().Add(40*time.Second).UnixMilli(), 10)
			bundle.fake.AnswerWith(answer(status, `{"errors":[{"message":"Rate limit exceeded","extensions":{"type":"ratelimited",`+
				`"code":"RATELIMITED","statusCode":429,"userPresentableMessage":"Too many requests."}}],"data":null}`,
				"X-RateLimit-Requests-Remaining", "0", "X-RateLimit-Requests-Reset", reset))

			_, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(`{"teamId":"team-eng","title":"t"}`), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, "ratelimited", execErr.Code, status)
			require.True(t, execErr.Retryable, status)
			require.Greater(t, execErr.RetryAfter, 35*time.Second, status)
			require.LessOrEqual(t, execErr.RetryAfter, 40*time.Second, status)
		}
	})

	t.Run("RateLimitedByExhaustedBudget", func(t *testing.T) {
		t.Parallel()

		at := func(d time.Duration) string { return strconv.FormatInt(time.Now().Add(d).UnixMilli(), 10) }
		refused := `{"errors":[{"message":"Rate limit exceeded","extensions":{"code":"RATELIMITED","statusCode":429}}],"data":null}`
		for name, tc := range map[string]struct {
			headers  []string
			from, to time.Duration
			// otherLimit: only the endpoint's budget is spent, so the
			// organization's other Linear calls need not wait.
			otherLimit bool
		}{
			// The complexity budget is spent; the requests window, with room
			// left, resets much later: wait for complexity only.
			"complexity": {[]string{
				"X-RateLimit-Requests-Remaining", "4900", "X-RateLimit-Requests-Reset", at(50 * time.Minute),
				"X-RateLimit-Complexity-Remaining", "0", "X-RateLimit-Complexity-Reset", at(20 * time.Second),
			}, 15 * time.Second, 20 * time.Second, false},
			// The query costs more than the complexity left.
			"complexity below the query's cost": {[]string{
				"X-Complexity", "1200",
				"X-RateLimit-Requests-Remaining", "4900", "X-RateLimit-Requests-Reset", at(50 * time.Minute),
				"X-RateLimit-Complexity-Remaining", "800", "X-RateLimit-Complexity-Reset", at(20 * time.Second),
			}, 15 * time.Second, 20 * time.Second, false},
			// The requests budget is spent; complexity, with room, resets
			// sooner: waiting for it would send the call back too early.
			"requests": {[]string{
				"X-RateLimit-Requests-Remaining", "0", "X-RateLimit-Requests-Reset", at(10 * time.Minute),
				"X-RateLimit-Complexity-Remaining", "90000", "X-RateLimit-Complexity-Reset", at(5 * time.Second),
			}, 9 * time.Minute, 10 * time.Minute, false},
			"endpoint": {[]string{
				"X-RateLimit-Requests-Remaining", "4900", "X-RateLimit-Requests-Reset", at(50 * time.Minute),
				"X-RateLimit-Endpoint-Requests-Remaining", "0", "X-RateLimit-Endpoint-Requests-Reset", at(20 * time.Second),
			}, 15 * time.Second, 20 * time.Second, true},
			"endpoint and requests": {[]string{
				"X-RateLimit-Requests-Remaining", "0", "X-RateLimit-Requests-Reset", at(10 * time.Second),
				"X-RateLimit-Endpoint-Requests-Remaining", "0", "X-RateLimit-Endpoint-Requests-Reset", at(20 * time.Second),
			}, 15 * time.Second, 20 * time.Second, false},
			// Both spent: the later reset.
			"both": {[]string{
				"X-RateLimit-Requests-Remaining", "0", "X-RateLimit-Requests-Reset", at(20 * time.Second),
				"X-RateLimit-Complexity-Remaining", "0", "X-RateLimit-Complexity-Reset", at(2 * time.Minute),
			}, 115 * time.Second, 2 * time.Minute, false},
			// Without Remaining headers either may be spent: the later reset.
			"unknown": {[]string{
				"X-RateLimit-Requests-Reset", at(2 * time.Minute), "X-RateLimit-Complexity-Reset", at(20 * time.Second),
			}, 115 * time.Second, 2 * time.Minute, false},
		} {
			bundle := setup(t)
			bundle.fake.AnswerWith(answer(http.StatusBadRequest, refused, tc.headers...))

			_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, "ratelimited", execErr.Code, name)
			require.True(t, execErr.Retryable, name)
			require.Greater(t, execErr.RetryAfter, tc.from, name)
			require.LessOrEqual(t, execErr.RetryAfter, tc.to, name)
			require.Equal(t, tc.otherLimit, execErr.OtherLimit, name)
		}
	})

	t.Run("MutationRedirected", func(t *testing.T) {
		t.Parallel()
		// Go's client follows a 302 to a POST with a GET without the
		// mutation: the redirect is the answer instead.
		bundle := setup(t)
		bundle.fake.AnswerWith(func(w http.ResponseWriter, r *http.Request, _ lineartest.Call) {
			http.Redirect(w, r, "/graphql", http.StatusFound)
		})

		_, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(`{"teamId":"team-eng","title":"t"}`), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "http_302", execErr.Code)
		require.False(t, execErr.Retryable)
		require.Len(t, bundle.fake.Calls(), 1)
	})

	t.Run("HTTPServerError", func(t *testing.T) {
		t.Parallel()

		for _, status := range []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable} {
			bundle := setup(t)
			bundle.fake.AnswerWith(answer(status, `<html>oops</html>`))

			_, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(`{"teamId":"team-eng","title":"t"}`), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, "http_"+strconv.Itoa(status), execErr.Code)
			require.True(t, execErr.Retryable)
			require.Zero(t, execErr.RetryAfter)
		}
	})

	t.Run("HTTPServerErrorWithRetryAfter", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.fake.AnswerWith(answer(http.StatusServiceUnavailable, ``, "Retry-After", "12"))

		_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "http_503", execErr.Code)
		require.True(t, execErr.Retryable)
		require.Equal(t, 12*time.Second, execErr.RetryAfter)
	})

	t.Run("HTTPServerErrorWithGraphQLErrors", func(t *testing.T) {
		t.Parallel()

		for _, code := range []string{"INTERNAL_SERVER_ERROR", "INVALID_INPUT", "SOMETHING_NEW"} {
			bundle := setup(t)
			bundle.fake.AnswerWith(answer(http.StatusInternalServerError,
				`{"errors":[{"message":"Something went wrong","extensions":{"code":"`+code+`"}}],"data":null}`))

			_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
			execErr := requireExecError(t, err)
			require.True(t, execErr.Retryable, code)
		}
	})

	t.Run("HTTPClientError", func(t *testing.T) {
		t.Parallel()

		for _, status := range []int{http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed} {
			bundle := setup(t)
			bundle.fake.AnswerWith(answer(status, `not graphql`))

			_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, "http_"+strconv.Itoa(status), execErr.Code)
			require.False(t, execErr.Retryable)
		}
	})

	t.Run("GraphQLErrorRetryable", func(t *testing.T) {
		t.Parallel()

		for _, code := range []string{"INTERNAL_SERVER_ERROR", "INTERNAL_ERROR", "LOCK_TIMEOUT"} {
			bundle := setup(t)
			bundle.fake.AnswerWith(answer(http.StatusOK, `{"errors":[{"message":"Internal error","extensions":{"code":"`+code+`"}}],"data":null}`))

			_, err := bundle.source.Execute(ctx, linear.ActionUpdateIssue, json.RawMessage(`{"issueId":"ENG-1","title":"t"}`), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, strings.ToLower(code), execErr.Code)
			require.True(t, execErr.Retryable, code)
		}
	})

	t.Run("GraphQLErrorNotRetryable", func(t *testing.T) {
		t.Parallel()

		for body, wantCode := range map[string]string{
			`{"errors":[{"message":"Argument Validation Error","extensions":{"type":"invalid input","code":"INVALID_INPUT",` +
				`"userPresentableMessage":"Title must be shorter than 256 characters."}}],"data":null}`: "invalid_input",
			`{"errors":[{"message":"Cannot query field \"nope\" on type \"Issue\".","extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}]}`: "graphql_validation_failed",
			`{"errors":[{"message":"Usage limit reached","extensions":{"code":"USAGE_LIMIT_EXCEEDED"}}]}`:                                 "usage_limit_exceeded",
			`{"errors":[{"message":"Something odd","extensions":{"code":"Not A Code <b>"}}]}`:                                             "graphql_error",
			`{"errors":[{"message":"Something odd"}]}`:                                                                                    "graphql_error",
			`{"errors":[{"message":"Something odd","extensions":{"code":42}}]}`:                                                           "graphql_error",
			`{"errors":[{"message":"Partial","extensions":{"code":"INVALID_INPUT"}}],"data":{"issueUpdate":{"success":true}}}`:            "invalid_input",
		} {
			bundle := setup(t)
			bundle.fake.AnswerWith(answer(http.StatusOK, body))

			_, err := bundle.source.Execute(ctx, linear.ActionUpdateIssue, json.RawMessage(`{"issueId":"ENG-1","title":"t"}`), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, wantCode, execErr.Code, body)
			require.False(t, execErr.Retryable, body)
			require.NotEmpty(t, execErr.Message, body)
		}
	})

	t.Run("InvalidInputFromLinear", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		_, err := bundle.source.Execute(ctx, linear.ActionCreateIssue,
			json.RawMessage(`{"teamId":"team-eng","title":"`+strings.Repeat("x", 300)+`"}`), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "invalid_input", execErr.Code)
		require.False(t, execErr.Retryable)
		require.Contains(t, execErr.Message, "Title must be shorter than 256 characters.")
	})

	t.Run("MostDecisiveGraphQLErrorWins", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.fake.AnswerWith(answer(http.StatusOK, `{"errors":[`+
			`{"message":"Internal","extensions":{"code":"INTERNAL_SERVER_ERROR"}},`+
			`{"message":"Bad input","extensions":{"code":"INVALID_INPUT"}},`+
			`{"message":"Not authenticated","extensions":{"code":"AUTHENTICATION_ERROR"}}]}`))

		_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, executors.CodeUnauthorized, execErr.Code)
		require.Contains(t, execErr.Message, "2 more errors")

		bundle = setup(t)
		bundle.fake.AnswerWith(answer(http.StatusOK, `{"errors":[`+
			`{"message":"Internal","extensions":{"code":"INTERNAL_SERVER_ERROR"}},`+
			`{"message":"Bad input","extensions":{"code":"INVALID_INPUT"}}]}`))
		_, err = bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
		execErr = requireExecError(t, err)
		require.Equal(t, "invalid_input", execErr.Code)
		require.False(t, execErr.Retryable)
	})

	t.Run("LongMessageIsBounded", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.fake.AnswerWith(answer(http.StatusOK, `{"errors":[{"message":"`+strings.Repeat("é", 5000)+`\n\tend","extensions":{"code":"INVALID_INPUT"}}]}`))

		_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
		execErr := requireExecError(t, err)
		require.Less(t, len([]rune(execErr.Message)), 600)
		require.NotContains(t, execErr.Message, "\n")
	})

	t.Run("TokenNeverInErrors", func(t *testing.T) {
		t.Parallel()

		for _, tc := range []struct {
			token, kind string
		}{
			{testAPIKey, executors.TokenKindAPIKey},
			{testOAuthToken, executors.TokenKindOAuth},
		} {
			for _, reply := range []struct {
				status int
				body   string
			}{
				{http.StatusOK, `{"errors":[{"message":"Invalid token ` + tc.token + `","extensions":{"code":"AUTHENTICATION_ERROR",` +
					`"userPresentableMessage":"Bearer ` + tc.token + ` is not valid"}}]}`},
				{http.StatusBadRequest, `{"errors":[{"message":"bad ` + tc.token + `","extensions":{"code":"` + tc.token + `"}}]}`},
				{http.StatusUnauthorized, `{"errors":[{"message":"` + tc.token + `"}]}`},
				// The token straddles the point where long messages are cut.
				{http.StatusOK, `{"errors":[{"message":"` + strings.Repeat("x", 490) + tc.token + `","extensions":{"code":"INVALID_INPUT"}}]}`},
			} {
				bundle := setup(t)
				bundle.fake.AnswerWith(answer(reply.status, reply.body))

				ec := execContext()
				ec.Token, ec.TokenKind = tc.token, tc.kind
				_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), ec)
				execErr := requireExecError(t, err)
				require.Contains(t, err.Error(), "[REDACTED]", reply.body)
				secret := strings.TrimPrefix(strings.TrimPrefix(tc.token, "lin_api_"), "lin_oauth_")
				require.NotContains(t, execErr.Message, secret[:8], "no fragment of the token survives")
			}
		}
	})

	t.Run("TokenNeverInResults", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.fake.AnswerWith(answer(http.StatusOK, `{"data":{"issue":{"id":"i1","description":"key is `+testAPIKey+`"}}}`))

		res, err := bundle.source.Execute(ctx, linear.ActionGetIssue, json.RawMessage(`{"issueId":"i1"}`), execContext())
		require.NoError(t, err)
		require.NotContains(t, string(res.Data), testAPIKey)
		require.Contains(t, string(res.Data), "[REDACTED]")
	})

	t.Run("InvalidResponse", func(t *testing.T) {
		t.Parallel()

		for _, body := range []string{
			`<html><body>Service maintenance</body></html>`,
			``,
			`[]`,
			`{}`,
			`{"data":null}`,
			`{"data":{"issues":null}}`,
			`{"data":{"issues":{"nodes":"x"}}}`,
			`{"data":{"issues":{"nodes":[]}}`,
			`{"errors":{"message":"not an array"}}`,
			`{"data":{"issues":{"nodes":[],"pad":"` + strings.Repeat("a", 8<<20) + `"}}}`,
		} {
			bundle := setup(t)
			bundle.fake.AnswerWith(answer(http.StatusOK, body))

			_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, "invalid_response", execErr.Code, body[:min(len(body), 60)])
			require.True(t, execErr.Retryable)
		}
	})

	t.Run("ResultWithoutID", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.fake.AnswerWith(answer(http.StatusOK, `{"data":{"issueCreate":{"success":true,"issue":{"title":"t"}}}}`))

		_, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(`{"teamId":"team-eng","title":"t"}`), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "invalid_response", execErr.Code)
	})

	t.Run("ConnectionDropped", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.fake.AnswerWith(func(w http.ResponseWriter, _ *http.Request, _ lineartest.Call) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		})

		_, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(`{"teamId":"team-eng","title":"t"}`), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "network_error", execErr.Code)
		require.True(t, execErr.Retryable)
	})

	t.Run("ConnectionRefused", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.fake.Close()

		_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "network_error", execErr.Code)
		require.True(t, execErr.Retryable)
	})

	t.Run("DeadlineExceeded", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		bundle.fake.AnswerWith(func(_ http.ResponseWriter, r *http.Request, _ lineartest.Call) {
			<-r.Context().Done()
		})

		ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()

		_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "timeout", execErr.Code)
		require.True(t, execErr.Retryable)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})

	t.Run("CanceledByCaller", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		arrived := make(chan struct{})
		bundle.fake.AnswerWith(func(_ http.ResponseWriter, r *http.Request, _ lineartest.Call) {
			close(arrived)
			<-r.Context().Done()
		})

		ctx, cancel := context.WithCancel(ctx)
		defer cancel()

		errc := make(chan error, 1)
		go func() {
			_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), execContext())
			errc <- err
		}()
		<-arrived
		cancel()
		err := <-errc

		require.ErrorIs(t, err, context.Canceled)
		execErr := requireExecError(t, err)
		require.Equal(t, "canceled", execErr.Code)
		require.True(t, executors.Classify(err).Retryable)
	})

	t.Run("UnknownAction", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		_, err := bundle.source.Execute(ctx, "delete_issue", json.RawMessage(`{"issueId":"ENG-1"}`), execContext())
		require.ErrorIs(t, err, executors.ErrUnknownAction)
		execErr := requireExecError(t, err)
		require.Equal(t, "unknown_action", execErr.Code)
		require.False(t, execErr.Retryable)
		require.Same(t, execErr, executors.Classify(err))
		require.Empty(t, bundle.fake.Calls())
	})

	t.Run("InvalidParams", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		for action, paramsList := range map[string][]string{
			linear.ActionListIssues: {``, `null`, `[]`, `{"first":0}`, `{"first":"5"}`, `{"orderBy":"x"}`, `{} {}`},
			linear.ActionGetIssue:   {`{}`, `{"issueId":""}`, `{"issueId":1}`},
			linear.ActionCreateIssue: {
				`{"title":"t"}`, `{"teamId":"team-eng"}`, `{"teamId":"team-eng","title":"t","priority":7}`,
				`{"teamId":"team-eng","title":"t","id":"x"}`,
			},
			linear.ActionUpdateIssue: {
				`{"title":"t"}`, `{"issueId":"ENG-1"}`, `{"issueId":"ENG-1","title":""}`,
				`{"issueId":"ENG-1","stateId":""}`, `{"issueId":"ENG-1","assigneeId":""}`, `{"issueId":"ENG-1","priority":-1}`,
			},
			linear.ActionAddComment: {`{"issueId":"i"}`, `{"body":"b"}`, `{"issueId":"i","body":"b","id":"c"}`},
		} {
			for _, params := range paramsList {
				_, err := bundle.source.Execute(ctx, action, json.RawMessage(params), execContext())
				execErr := requireExecError(t, err)
				require.Equal(t, "invalid_params", execErr.Code, "%s %s", action, params)
				require.False(t, execErr.Retryable, "%s %s", action, params)
				require.Contains(t, execErr.Message, action)
			}
		}
		require.Empty(t, bundle.fake.Calls())
	})

	t.Run("MissingToken", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		_, err := bundle.source.Execute(ctx, linear.ActionListIssues, json.RawMessage(`{}`), executors.ExecContext{})
		execErr := requireExecError(t, err)
		require.Equal(t, "not_authed", execErr.Code)
		require.False(t, execErr.Retryable)
		require.Empty(t, bundle.fake.Calls())
	})

	t.Run("ConcurrentUse", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		const calls = 20
		errs := make(chan error, calls)
		var wg sync.WaitGroup
		for i := range calls {
			wg.Go(func() {
				ec := execContext()
				ec.IdempotencyKey = "inv_" + strconv.Itoa(i)
				_, err := bundle.source.Execute(ctx, linear.ActionCreateIssue, json.RawMessage(`{"teamId":"team-eng","title":"t"}`), ec)
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, calls, bundle.fake.IssueCount())
	})
}
