package sentry_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/sentry"
	"github.com/outboxd/outboxd/executors/sentry/sentrytest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testToken has the shape of a Sentry user auth token.
const testToken = "sntryu_0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"

const (
	issueJSON = `{"id":"4504123456","shortId":"WEB-1A","title":"TypeError: Cannot read properties of undefined (reading 'id')",` +
		`"culprit":"app/components/UserCard in render","permalink":"https://acme.sentry.io/issues/4504123456/",` +
		`"level":"error","status":"unresolved","statusDetails":{},"isPublic":false,"platform":"javascript",` +
		`"project":{"id":"1","name":"Web","slug":"web"},"type":"error",` +
		`"metadata":{"type":"TypeError","value":"Cannot read properties of undefined (reading 'id')"},` +
		`"numComments":0,"assignedTo":null,"isBookmarked":false,"isSubscribed":false,"hasSeen":false,` +
		`"count":"42","userCount":7,"firstSeen":"2024-05-01T10:00:00.000000Z","lastSeen":"2024-05-02T11:30:00.000000Z"}`
	secondIssueJSON = `{"id":"4504123457","shortId":"WEB-1B","title":"ChunkLoadError: Loading chunk 7 failed.",` +
		`"culprit":"app/routes","permalink":"https://acme.sentry.io/issues/4504123457/","level":"error",` +
		`"status":"unresolved","statusDetails":{},"project":{"id":"1","name":"Web","slug":"web"},` +
		`"count":"3","userCount":2,"firstSeen":"2024-05-02T08:00:00Z","lastSeen":"2024-05-02T09:00:00Z"}`
	issuesPage1 = `[` + issueJSON + `]`
	issuesPage2 = `[` + secondIssueJSON + `]`

	eventsJSON = `[{"id":"9fac2ceed9344f2bbfdd1fdacb0ed9b1","eventID":"9fac2ceed9344f2bbfdd1fdacb0ed9b1",` +
		`"groupID":"4504123456","projectID":"1","title":"TypeError: Cannot read properties of undefined (reading 'id')",` +
		`"message":"","dateCreated":"2024-05-02T11:30:00Z","platform":"javascript","event.type":"error",` +
		`"tags":[{"key":"level","value":"error"},{"key":"browser","value":"Chrome 124"}],` +
		`"user":{"id":"42","email":"ada@example.com"}}]`
	eventJSON = `{"id":"9fac2ceed9344f2bbfdd1fdacb0ed9b1","eventID":"9fac2ceed9344f2bbfdd1fdacb0ed9b1",` +
		`"groupID":"4504123456","projectID":"1","title":"TypeError: Cannot read properties of undefined (reading 'id')",` +
		`"dateCreated":"2024-05-02T11:30:00Z","platform":"javascript",` +
		`"entries":[{"type":"exception","data":{"values":[{"type":"TypeError",` +
		`"value":"Cannot read properties of undefined (reading 'id')","stacktrace":{"frames":[` +
		`{"filename":"app/components/UserCard.tsx","function":"render","lineNo":17,"inApp":true}]}}]}}],` +
		`"tags":[{"key":"level","value":"error"}],"contexts":{"browser":{"name":"Chrome","version":"124"}}}`
	resolvedJSON = `{"status":"resolved","statusDetails":{},"inbox":null}`

	linkNext = `<https://sentry.io/api/0/projects/acme/web/issues/?query=is%3Aunresolved&cursor=1714650000000:0:1>; ` +
		`rel="previous"; results="false"; cursor="1714650000000:0:1", ` +
		`<https://sentry.io/api/0/projects/acme/web/issues/?query=is%3Aunresolved&cursor=1714650000000:100:0>; ` +
		`rel="next"; results="true"; cursor="1714650000000:100:0"`
	linkLast = `<https://sentry.io/api/0/projects/acme/web/issues/?query=is%3Aunresolved&cursor=1714650000000:0:1>; ` +
		`rel="previous"; results="true"; cursor="1714650000000:0:1", ` +
		`<https://sentry.io/api/0/projects/acme/web/issues/?query=is%3Aunresolved&cursor=1714650000000:200:0>; ` +
		`rel="next"; results="false"; cursor="1714650000000:200:0"`
)

type testBundle struct {
	source executors.Source
	server *sentrytest.Server
}

func (b *testBundle) recorded() []sentrytest.Request {
	return b.server.Requests()
}

// only returns the one request the loopback Sentry saw.
func (b *testBundle) only(t *testing.T) sentrytest.Request {
	t.Helper()
	reqs := b.recorded()
	require.Len(t, reqs, 1)
	return reqs[0]
}

// setup starts a loopback Sentry that records each request and answers with
// handler, and a Source pointed at it.
func setup(t *testing.T, handler http.HandlerFunc) *testBundle {
	t.Helper()

	server := sentrytest.New(t)
	server.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		handler(w, r)
		return true
	})
	source, err := sentry.New(&sentry.Config{BaseURL: server.URL(), HTTPClient: server.Client()})
	require.NoError(t, err)
	return &testBundle{source: source, server: server}
}

// answer returns a handler replying with status, body and extra headers.
func answer(status int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Add(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func execContext() executors.ExecContext {
	return executors.ExecContext{
		Token:          testToken,
		OrganizationID: "org_1",
		SessionID:      "sess_1",
		IdempotencyKey: "inv_0123",
	}
}

// requireExecError asserts err is a classified failure free of the token and
// returns its classification.
func requireExecError(t *testing.T, err error) *executors.Error {
	t.Helper()
	require.Error(t, err)
	require.NotContains(t, err.Error(), testToken)

	var execErr *executors.Error
	require.ErrorAs(t, err, &execErr)
	require.NotContains(t, execErr.Code, testToken)
	require.NotContains(t, execErr.Message, testToken)
	return execErr
}

// requireRead asserts the common shape of a read: GET, bearer token, JSON
// accepted, no body and no idempotency key.
func requireRead(t *testing.T, req sentrytest.Request) {
	t.Helper()
	require.Equal(t, http.MethodGet, req.Method)
	require.Equal(t, "Bearer "+testToken, req.Header.Get("Authorization"))
	require.Equal(t, "application/json", req.Header.Get("Accept"))
	require.NotContains(t, req.Header, "X-Outboxd-Idempotency-Key")
	require.NotContains(t, req.Header, "Idempotency-Key")
	require.Empty(t, req.Body)
}

func TestNew(t *testing.T) {
	t.Parallel()

	t.Run("NilConfigUsesDefaults", func(t *testing.T) {
		t.Parallel()

		source, err := sentry.New(nil)
		require.NoError(t, err)
		require.Equal(t, sentry.SourceID, source.ID())
		require.Equal(t, "sentry", source.ID())
	})

	t.Run("WithDefaults", func(t *testing.T) {
		t.Parallel()

		cfg := (&sentry.Config{}).WithDefaults()
		require.Equal(t, "https://sentry.io/api/0", cfg.BaseURL)
		require.Equal(t, sentry.DefaultBaseURL, cfg.BaseURL)
		require.NotNil(t, cfg.HTTPClient)
		require.Zero(t, cfg.HTTPClient.Timeout, "deadlines come from ctx")

		client := &http.Client{}
		cfg = (&sentry.Config{BaseURL: "https://sentry.example.com/api/0/", HTTPClient: client}).WithDefaults()
		require.Equal(t, "https://sentry.example.com/api/0", cfg.BaseURL)
		require.Same(t, client, cfg.HTTPClient)

		var nilCfg *sentry.Config
		require.Equal(t, sentry.DefaultBaseURL, nilCfg.WithDefaults().BaseURL)
	})

	t.Run("InvalidBaseURL", func(t *testing.T) {
		t.Parallel()

		for _, baseURL := range []string{
			"sentry.io/api/0",
			"ftp://sentry.io/api/0",
			"https://",
			"https://sentry.io/api/0?x=1",
			"https://sentry.io/api/0#frag",
			"https://user:pass@sentry.io/api/0",
			"://bad",
		} {
			_, err := sentry.New(&sentry.Config{BaseURL: baseURL})
			require.Error(t, err, baseURL)
		}
	})
}

func TestSource_ListActions(t *testing.T) {
	t.Parallel()

	setup := func(t *testing.T) map[string]executors.Definition {
		t.Helper()
		source, err := sentry.New(nil)
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

	// fieldsOf validates params against action's schema and returns the
	// failing fields, each once (an empty id fails minLength and pattern).
	fieldsOf := func(t *testing.T, validator *executors.Validator, def executors.Definition, params string) []string {
		t.Helper()
		fieldErrs, err := validator.Validate(def.Params, json.RawMessage(params))
		require.NoError(t, err)
		fields := make([]string, len(fieldErrs))
		for i, fe := range fieldErrs {
			fields[i] = fe.Field
			require.NotEmpty(t, fe.Message)
		}
		return slices.Compact(fields)
	}

	t.Run("Definitions", func(t *testing.T) {
		t.Parallel()
		defs := setup(t)

		require.Equal(t, map[string]executors.Tier{
			sentry.ActionListIssues:      executors.TierR1,
			sentry.ActionGetIssue:        executors.TierR1,
			sentry.ActionListIssueEvents: executors.TierR1,
			sentry.ActionGetEvent:        executors.TierR1,
			sentry.ActionUpdateIssue:     executors.TierR2,
		}, func() map[string]executors.Tier {
			risks := make(map[string]executors.Tier)
			for id, def := range defs {
				risks[id] = def.Tier
			}
			return risks
		}())

		for id, def := range defs {
			require.NotEmpty(t, def.Description, id)

			var schema struct {
				Type                 string                     `json:"type"`
				AdditionalProperties *bool                      `json:"additionalProperties"`
				Required             []string                   `json:"required"`
				Properties           map[string]json.RawMessage `json:"properties"`
			}
			require.NoError(t, json.Unmarshal(def.Params, &schema), id)
			require.Equal(t, "object", schema.Type, id)
			require.NotNil(t, schema.AdditionalProperties, id)
			require.False(t, *schema.AdditionalProperties, id)
			for _, name := range schema.Required {
				require.Contains(t, schema.Properties, name, id)
			}
			for name, raw := range schema.Properties {
				var prop struct {
					Description string `json:"description"`
				}
				require.NoError(t, json.Unmarshal(raw, &prop), id+"."+name)
				require.NotEmpty(t, prop.Description, id+"."+name)
			}
		}

		require.Contains(t, defs[sentry.ActionListIssues].Description, "next_cursor")
		require.Contains(t, defs[sentry.ActionUpdateIssue].Description, "assignedTo")
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
			sentry.ActionListIssues: {
				`{"organization_slug":"acme","project_slug":"web"}`,
				`{"organization_slug":"acme","project_slug":"web","query":"is:unresolved level:error"}`,
				`{"organization_slug":"acme","project_slug":"web","query":"","cursor":"1714650000000:100:0"}`,
			},
			sentry.ActionGetIssue: {
				`{"issue_id":"4504123456"}`,
				`{"issue_id":"4504123456","organization_slug":"acme"}`,
			},
			sentry.ActionListIssueEvents: {
				`{"issue_id":"4504123456"}`,
				`{"issue_id":"4504123456","organization_slug":"acme"}`,
			},
			sentry.ActionGetEvent: {
				`{"issue_id":"4504123456","event_id":"9fac2ceed9344f2bbfdd1fdacb0ed9b1"}`,
				`{"issue_id":"4504123456","event_id":"latest","organization_slug":"acme"}`,
			},
			sentry.ActionUpdateIssue: {
				`{"issue_id":"4504123456","status":"resolved"}`,
				`{"issue_id":"4504123456","status":"resolvedInNextRelease"}`,
				`{"issue_id":"4504123456","assignedTo":"user:42"}`,
				`{"issue_id":"4504123456","assignedTo":""}`,
				`{"issue_id":"4504123456","status":"ignored","assignedTo":"team:7","organization_slug":"acme"}`,
			},
		} {
			for _, params := range paramsList {
				require.Empty(t, fieldsOf(t, validator, defs[action], params), "%s %s", action, params)
			}
		}
	})

	t.Run("SchemaRejectsBadParams", func(t *testing.T) {
		t.Parallel()
		defs := setup(t)
		validator := executors.NewValidator()

		for action, cases := range map[string]map[string][]string{
			sentry.ActionListIssues: {
				`{}`:                           {"organization_slug", "project_slug"},
				`{"organization_slug":"acme"}`: {"project_slug"},
				`{"project_slug":"web"}`:       {"organization_slug"},
				`{"organization_slug":"","project_slug":""}`:                          {"organization_slug", "project_slug"},
				`{"organization_slug":"acme","project_slug":"web","query":7}`:         {"query"},
				`{"organization_slug":"acme","project_slug":"web","cursor":""}`:       {"cursor"},
				`{"organization_slug":"acme","project_slug":"web","limit":5}`:         {"limit"},
				`{"organization_slug":1,"project_slug":"web","cursor":null,"x":true}`: {"cursor", "organization_slug", "x"},
				`["acme","web"]`: {""},
				`{"organization_slug":".","project_slug":".."}`:        {"organization_slug", "project_slug"},
				`{"organization_slug":"acme","project_slug":"..."}`:    {"project_slug"},
				`{"organization_slug":"acme/x","project_slug":"w%2F"}`: {"organization_slug", "project_slug"},
			},
			sentry.ActionGetIssue: {
				`{}`:                               {"issue_id"},
				`{"issue_id":""}`:                  {"issue_id"},
				`{"issue_id":4504123456}`:          {"issue_id"},
				`{"issue_id":"1","project":"web"}`: {"project"},
				`{"issue_id":"1","organization_slug":""}`:  {"organization_slug"},
				`{"issue_id":".."}`:                        {"issue_id"},
				`{"issue_id":"1","organization_slug":"."}`: {"organization_slug"},
			},
			sentry.ActionListIssueEvents: {
				`{}`:                           {"issue_id"},
				`{"issue_id":"1","full":true}`: {"full"},
				`{"issue_id":"."}`:             {"issue_id"},
			},
			sentry.ActionGetEvent: {
				`{}`:                                        {"event_id", "issue_id"},
				`{"issue_id":"1"}`:                          {"event_id"},
				`{"event_id":"latest"}`:                     {"issue_id"},
				`{"issue_id":"1","event_id":""}`:            {"event_id"},
				`{"issue_id":"1","event_id":".."}`:          {"event_id"},
				`{"issue_id":"1","event_id":"latest/../2"}`: {"event_id"},
				`{"issue_id":"..","event_id":"latest","organization_slug":".."}`: {"issue_id", "organization_slug"},
			},
			sentry.ActionUpdateIssue: {
				`{}`:                                 {"assignedTo", "issue_id", "status"},
				`{"issue_id":"1"}`:                   {"assignedTo", "status"},
				`{"issue_id":"1","status":"closed"}`: {"status"},
				`{"issue_id":"1","status":"resolved","assignedTo":7}`:                  {"assignedTo"},
				`{"status":"resolved"}`:                                                {"issue_id"},
				`{"issue_id":"1","status":"resolved","hasSeen":true}`:                  {"hasSeen"},
				`{"issue_id":"..","status":"resolved"}`:                                {"issue_id"},
				`{"issue_id":"1/..","status":"resolved"}`:                              {"issue_id"},
				`{"issue_id":"1%2F..","status":"resolved","organization_slug":"a\\b"}`: {"issue_id", "organization_slug"},
			},
		} {
			for params, wantFields := range cases {
				require.Equal(t, wantFields, fieldsOf(t, validator, defs[action], params), "%s %s", action, params)
			}
		}
	})
}

func TestSource_Execute(t *testing.T) {
	t.Parallel()

	ctx := context.Background()

	execute := func(t *testing.T, bundle *testBundle, action, params string) (executors.Result, error) {
		t.Helper()
		return bundle.source.Execute(ctx, action, json.RawMessage(params), execContext())
	}

	t.Run("ListIssues", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, issuesPage1, "Link", linkNext))

		res, err := execute(t, bundle, sentry.ActionListIssues, `{"organization_slug":"acme","project_slug":"web"}`)
		require.NoError(t, err)
		require.JSONEq(t, `{"issues":`+issuesPage1+`,"next_cursor":"1714650000000:100:0"}`, string(res.Data))
		require.Empty(t, res.ProviderRef)
		require.False(t, res.Conflict)

		req := bundle.only(t)
		requireRead(t, req)
		require.Equal(t, "/api/0/projects/acme/web/issues/", req.Path)
		require.Equal(t, url.Values{"query": {"is:unresolved"}}, req.Query)
	})

	t.Run("ListIssuesWithQueryAndCursor", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, issuesPage2, "Link", linkLast))

		res, err := execute(t, bundle, sentry.ActionListIssues,
			`{"organization_slug":"acme","project_slug":"web","query":"is:unresolved level:error & more","cursor":"1714650000000:100:0"}`)
		require.NoError(t, err)
		require.JSONEq(t, `{"issues":`+issuesPage2+`,"next_cursor":null}`, string(res.Data))

		req := bundle.only(t)
		requireRead(t, req)
		require.Equal(t, url.Values{
			"query":  {"is:unresolved level:error & more"},
			"cursor": {"1714650000000:100:0"},
		}, req.Query)
	})

	t.Run("ListIssuesEmptyQueryListsEveryStatus", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, `[]`))

		res, err := execute(t, bundle, sentry.ActionListIssues, `{"organization_slug":"acme","project_slug":"web","query":""}`)
		require.NoError(t, err)
		require.JSONEq(t, `{"issues":[],"next_cursor":null}`, string(res.Data))
		require.Equal(t, url.Values{"query": {""}}, bundle.only(t).Query)
	})

	t.Run("ListIssuesPagination", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Query().Get("cursor") {
			case "":
				answer(http.StatusOK, issuesPage1, "Link", linkNext)(w, r)
			case "1714650000000:100:0":
				answer(http.StatusOK, issuesPage2, "Link", linkLast)(w, r)
			default:
				answer(http.StatusBadRequest, `{"detail":"Invalid cursor parameter."}`)(w, r)
			}
		})

		params := map[string]string{"organization_slug": "acme", "project_slug": "web"}
		var issues []string
		for page := 0; ; page++ {
			require.Less(t, page, 5, "pagination does not end")
			raw, err := json.Marshal(params)
			require.NoError(t, err)
			res, err := execute(t, bundle, sentry.ActionListIssues, string(raw))
			require.NoError(t, err)

			var data struct {
				Issues []struct {
					ID      string `json:"id"`
					ShortID string `json:"shortId"`
				} `json:"issues"`
				NextCursor *string `json:"next_cursor"`
			}
			require.NoError(t, json.Unmarshal(res.Data, &data))
			for _, issue := range data.Issues {
				issues = append(issues, issue.ShortID)
			}
			if data.NextCursor == nil {
				break
			}
			params["cursor"] = *data.NextCursor
		}
		require.Equal(t, []string{"WEB-1A", "WEB-1B"}, issues)

		reqs := bundle.recorded()
		require.Len(t, reqs, 2)
		require.Empty(t, reqs[0].Query.Get("cursor"))
		require.Equal(t, "1714650000000:100:0", reqs[1].Query.Get("cursor"))
		require.Equal(t, "is:unresolved", reqs[1].Query.Get("query"))
	})

	t.Run("ListIssuesLinkHeaderForms", func(t *testing.T) {
		t.Parallel()

		const page = "https://sentry.io/api/0/projects/acme/web/issues/?cursor="
		for name, tc := range map[string]struct {
			links []string
			want  *string
		}{
			"NoLink":           {nil, nil},
			"NextHasNoResults": {[]string{linkLast}, nil},
			"NextFirst":        {[]string{`<` + page + `0:100:0>; rel="next"; results="true"; cursor="0:100:0", <` + page + `0:0:1>; rel="previous"; results="false"; cursor="0:0:1"`}, ptr("0:100:0")},
			"SeparateHeaders": {[]string{
				`<` + page + `0:0:1>; rel="previous"; results="false"; cursor="0:0:1"`,
				`<` + page + `0:100:0>; rel="next"; results="true"; cursor="0:100:0"`,
			}, ptr("0:100:0")},
			"CursorFromTarget":  {[]string{`<` + page + `5:200:0>; rel="next"; results="true"`}, ptr("5:200:0")},
			"UnquotedAndSpaced": {[]string{`<` + page + `1:2:0> ;rel=next ; results=true ;cursor=1:2:0`}, ptr("1:2:0")},
			"CaseInsensitive":   {[]string{`<` + page + `1:2:0>; REL="Next"; Results="TRUE"; Cursor="1:2:0"`}, ptr("1:2:0")},
			"CommaInTarget":     {[]string{`<https://sentry.io/api/0/x/?a=b,c&cursor=9:9:0>; rel="next"; results="true"; cursor="9:9:0"`}, ptr("9:9:0")},
			"EscapedQuote":      {[]string{`<` + page + `x>; title="a \"quoted\", title"; rel="next"; results="true"; cursor="7:0:0"`}, ptr("7:0:0")},
			"NoCursorAnywhere":  {[]string{`<https://sentry.io/api/0/x/>; rel="next"; results="true"`}, nil},
			"Malformed":         {[]string{`garbage; rel="next"; results="true"; cursor="1:1:1"`}, nil},
			"Unterminated":      {[]string{`<` + page + `1:1:1>; rel="next"; results="true"; cursor="1:1:1`}, nil},
			"NoResultsParam":    {[]string{`<` + page + `1:1:1>; rel="next"; cursor="1:1:1"`}, nil},
		} {
			headers := make([]string, 0, 2*len(tc.links))
			for _, l := range tc.links {
				headers = append(headers, "Link", l)
			}
			bundle := setup(t, answer(http.StatusOK, `[]`, headers...))

			res, err := execute(t, bundle, sentry.ActionListIssues, `{"organization_slug":"acme","project_slug":"web"}`)
			require.NoError(t, err, name)
			var data struct {
				NextCursor *string `json:"next_cursor"`
			}
			require.NoError(t, json.Unmarshal(res.Data, &data), name)
			require.Equal(t, tc.want, data.NextCursor, name)
		}
	})

	t.Run("ListIssuesNotAList", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, issueJSON))

		_, err := execute(t, bundle, sentry.ActionListIssues, `{"organization_slug":"acme","project_slug":"web"}`)
		execErr := requireExecError(t, err)
		require.Equal(t, "invalid_response", execErr.Code)
		require.True(t, execErr.Retryable)
	})

	t.Run("ReadActions", func(t *testing.T) {
		t.Parallel()

		for name, tc := range map[string]struct {
			action, params, body, wantPath string
		}{
			"GetIssue": {
				sentry.ActionGetIssue, `{"issue_id":"4504123456"}`, issueJSON,
				"/api/0/issues/4504123456/",
			},
			"GetIssueInOrganization": {
				sentry.ActionGetIssue, `{"issue_id":"4504123456","organization_slug":"acme"}`, issueJSON,
				"/api/0/organizations/acme/issues/4504123456/",
			},
			"ListIssueEvents": {
				sentry.ActionListIssueEvents, `{"issue_id":"4504123456"}`, eventsJSON,
				"/api/0/issues/4504123456/events/",
			},
			"ListIssueEventsInOrganization": {
				sentry.ActionListIssueEvents, `{"issue_id":"4504123456","organization_slug":"acme"}`, eventsJSON,
				"/api/0/organizations/acme/issues/4504123456/events/",
			},
			"GetEvent": {
				sentry.ActionGetEvent, `{"issue_id":"4504123456","event_id":"9fac2ceed9344f2bbfdd1fdacb0ed9b1"}`, eventJSON,
				"/api/0/issues/4504123456/events/9fac2ceed9344f2bbfdd1fdacb0ed9b1/",
			},
			"GetLatestEventInOrganization": {
				sentry.ActionGetEvent, `{"issue_id":"4504123456","event_id":"latest","organization_slug":"acme"}`, eventJSON,
				"/api/0/organizations/acme/issues/4504123456/events/latest/",
			},
		} {
			bundle := setup(t, answer(http.StatusOK, tc.body))

			res, err := execute(t, bundle, tc.action, tc.params)
			require.NoError(t, err, name)
			require.JSONEq(t, tc.body, string(res.Data), name)
			require.Empty(t, res.ProviderRef, name)

			req := bundle.only(t)
			requireRead(t, req)
			require.Equal(t, tc.wantPath, req.Path, name)
			require.Empty(t, req.Query, name)
		}
	})

	t.Run("UpdateIssue", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, resolvedJSON))

		res, err := execute(t, bundle, sentry.ActionUpdateIssue, `{"issue_id":"4504123456","status":"resolved"}`)
		require.NoError(t, err)
		require.JSONEq(t, resolvedJSON, string(res.Data))
		require.Equal(t, "4504123456", res.ProviderRef)
		require.False(t, res.Conflict)

		req := bundle.only(t)
		require.Equal(t, http.MethodPut, req.Method)
		require.Equal(t, "/api/0/issues/4504123456/", req.Path)
		require.Empty(t, req.Query)
		require.Equal(t, "Bearer "+testToken, req.Header.Get("Authorization"))
		require.Equal(t, "application/json", req.Header.Get("Content-Type"))
		require.Equal(t, "inv_0123", req.Header.Get("X-Outboxd-Idempotency-Key"))
		require.NotContains(t, req.Header, "Idempotency-Key")
		require.JSONEq(t, `{"status":"resolved"}`, string(req.Body))
	})

	t.Run("UpdateIssueBodies", func(t *testing.T) {
		t.Parallel()

		for params, want := range map[string]struct{ path, body string }{
			`{"issue_id":"1","assignedTo":"user:42"}`: {"/api/0/issues/1/", `{"assignedTo":"user:42"}`},
			`{"issue_id":"1","assignedTo":""}`:        {"/api/0/issues/1/", `{"assignedTo":""}`},
			`{"issue_id":"1","status":"ignored","assignedTo":"ada@example.com","organization_slug":"acme"}`: {
				"/api/0/organizations/acme/issues/1/", `{"status":"ignored","assignedTo":"ada@example.com"}`,
			},
			`{"issue_id":"1","status":"resolvedInNextRelease"}`: {"/api/0/issues/1/", `{"status":"resolvedInNextRelease"}`},
		} {
			bundle := setup(t, answer(http.StatusOK,
				`{"assignedTo":{"type":"user","id":"42","name":"Ada","email":"ada@example.com"}}`))

			res, err := execute(t, bundle, sentry.ActionUpdateIssue, params)
			require.NoError(t, err, params)
			require.Equal(t, "1", res.ProviderRef, params)

			req := bundle.only(t)
			require.Equal(t, http.MethodPut, req.Method, params)
			require.Equal(t, want.path, req.Path, params)
			require.JSONEq(t, want.body, string(req.Body), params)
		}
	})

	t.Run("UpdateIssueEmptyAnswer", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

		res, err := execute(t, bundle, sentry.ActionUpdateIssue, `{"issue_id":"1","status":"unresolved"}`)
		require.NoError(t, err)
		require.JSONEq(t, `{}`, string(res.Data))
		require.Equal(t, "1", res.ProviderRef)
	})

	t.Run("UpdateIssueWithoutIdempotencyKey", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, resolvedJSON))

		ec := execContext()
		ec.IdempotencyKey = ""
		_, err := bundle.source.Execute(ctx, sentry.ActionUpdateIssue, json.RawMessage(`{"issue_id":"1","status":"resolved"}`), ec)
		require.NoError(t, err)
		require.NotContains(t, bundle.only(t).Header, "X-Outboxd-Idempotency-Key")
	})

	t.Run("UpdateIssueNeedsAChange", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, resolvedJSON))

		for _, params := range []string{
			`{"issue_id":"1"}`,
			`{"issue_id":"1","organization_slug":"acme"}`,
			`{"issue_id":"1","status":"closed"}`,
		} {
			_, err := execute(t, bundle, sentry.ActionUpdateIssue, params)
			execErr := requireExecError(t, err)
			require.Equal(t, "invalid_params", execErr.Code, params)
			require.False(t, execErr.Retryable, params)
		}
		require.Empty(t, bundle.recorded())
	})

	t.Run("PathSegmentsEscaped", func(t *testing.T) {
		t.Parallel()

		const (
			org     = "acme corp?x=1"
			project = "web#frag"
			issue   = "12?status=resolved"
			event   = "ev 1?x"
		)
		const (
			escOrg     = "acme%20corp%3Fx=1"
			escProject = "web%23frag"
			escIssue   = "12%3Fstatus=resolved"
			escEvent   = "ev%201%3Fx"
		)
		params := func(fields map[string]string) string {
			raw, err := json.Marshal(fields)
			require.NoError(t, err)
			return string(raw)
		}

		for name, tc := range map[string]struct {
			action, params, body, wantPath string
		}{
			"ListIssues": {
				sentry.ActionListIssues, params(map[string]string{"organization_slug": org, "project_slug": project}), `[]`,
				"/api/0/projects/" + escOrg + "/" + escProject + "/issues/",
			},
			"GetIssue": {
				sentry.ActionGetIssue, params(map[string]string{"issue_id": issue}), issueJSON,
				"/api/0/issues/" + escIssue + "/",
			},
			"GetIssueInOrganization": {
				sentry.ActionGetIssue, params(map[string]string{"issue_id": issue, "organization_slug": org}), issueJSON,
				"/api/0/organizations/" + escOrg + "/issues/" + escIssue + "/",
			},
			"ListIssueEvents": {
				sentry.ActionListIssueEvents, params(map[string]string{"issue_id": issue, "organization_slug": org}), eventsJSON,
				"/api/0/organizations/" + escOrg + "/issues/" + escIssue + "/events/",
			},
			"GetEvent": {
				sentry.ActionGetEvent, params(map[string]string{"issue_id": issue, "event_id": event}), eventJSON,
				"/api/0/issues/" + escIssue + "/events/" + escEvent + "/",
			},
			"UpdateIssue": {
				sentry.ActionUpdateIssue, params(map[string]string{"issue_id": issue, "status": "resolved"}), resolvedJSON,
				"/api/0/issues/" + escIssue + "/",
			},
		} {
			bundle := setup(t, answer(http.StatusOK, tc.body))

			_, err := execute(t, bundle, tc.action, tc.params)
			require.NoError(t, err, name)

			req := bundle.only(t)
			require.Equal(t, tc.wantPath, req.Path, name)
			if tc.action == sentry.ActionListIssues {
				require.Equal(t, url.Values{"query": {"is:unresolved"}}, req.Query, name)
			} else {
				require.Empty(t, req.Query, name)
			}
		}
	})

	t.Run("DotSegmentsRejected", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, issueJSON))

		for action, params := range map[string]string{
			sentry.ActionGetIssue:        `{"issue_id":"..."}`,
			sentry.ActionListIssueEvents: `{"issue_id":"1","organization_slug":"."}`,
			sentry.ActionGetEvent:        `{"issue_id":"1","event_id":".."}`,
			sentry.ActionUpdateIssue:     `{"issue_id":"..","status":"resolved"}`,
			sentry.ActionListIssues:      `{"organization_slug":"acme","project_slug":".."}`,
		} {
			_, err := execute(t, bundle, action, params)
			execErr := requireExecError(t, err)
			require.Equal(t, "invalid_params", execErr.Code, action)
			require.False(t, execErr.Retryable, action)
		}
		require.Empty(t, bundle.recorded())
	})

	t.Run("UpdateIssueRedirected", func(t *testing.T) {
		t.Parallel()
		// A base URL the server redirects (http to https, a renamed host)
		// answers the PUT with a 301; Go's client would follow it with a
		// GET, whose answer, the issue as it was, read as the update done.
		bundle := setup(t, func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut {
				http.Redirect(w, r, r.URL.Path, http.StatusMovedPermanently)
				return
			}
			answer(http.StatusOK, issueJSON)(w, r)
		})

		_, err := execute(t, bundle, sentry.ActionUpdateIssue, `{"issue_id":"1","status":"resolved"}`)
		execErr := requireExecError(t, err)
		require.Equal(t, "http_301", execErr.Code)
		require.False(t, execErr.Retryable)
		require.Contains(t, execErr.Message, "redirect")
		require.Equal(t, http.MethodPut, bundle.only(t).Method, "the redirect is not followed")
	})

	t.Run("SeparatorsRejected", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, issueJSON))

		// Sentry's Django routes the path it decoded: "1%2Fevents" would
		// reach the issue's events, and "1/../../projects/acme/web/issues"
		// behind a proxy that resolves dots the bulk update of a project's
		// issues.
		for _, tc := range []struct{ action, params string }{
			{sentry.ActionGetIssue, `{"issue_id":"1/events"}`},
			{sentry.ActionGetIssue, `{"issue_id":"1%2Fevents"}`},
			{sentry.ActionGetIssue, `{"issue_id":"1\\events"}`},
			{sentry.ActionListIssueEvents, `{"issue_id":"1","organization_slug":"acme/x"}`},
			{sentry.ActionGetEvent, `{"issue_id":"1","event_id":"latest/../../2"}`},
			{sentry.ActionUpdateIssue, `{"issue_id":"1/../../projects/acme/web/issues","status":"resolved"}`},
			{sentry.ActionUpdateIssue, `{"issue_id":"1%252F..","status":"resolved"}`},
			{sentry.ActionListIssues, `{"organization_slug":"acme","project_slug":"web/..%2F"}`},
		} {
			_, err := execute(t, bundle, tc.action, tc.params)
			execErr := requireExecError(t, err)
			require.Equal(t, "invalid_params", execErr.Code, tc.params)
			require.False(t, execErr.Retryable, tc.params)
		}
		require.Empty(t, bundle.recorded())
	})

	t.Run("Unauthorized", func(t *testing.T) {
		t.Parallel()

		for action, params := range map[string]string{
			sentry.ActionListIssues:  `{"organization_slug":"acme","project_slug":"web"}`,
			sentry.ActionGetIssue:    `{"issue_id":"1"}`,
			sentry.ActionUpdateIssue: `{"issue_id":"1","status":"resolved"}`,
		} {
			bundle := setup(t, answer(http.StatusUnauthorized, `{"detail":"Invalid token"}`))

			_, err := execute(t, bundle, action, params)
			execErr := requireExecError(t, err)
			require.Equal(t, executors.CodeUnauthorized, execErr.Code, action)
			require.False(t, execErr.Retryable, action)
			require.Zero(t, execErr.RetryAfter, action)
			require.Contains(t, execErr.Message, "Invalid token", action)
		}
	})

	t.Run("Forbidden", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusForbidden, `{"detail":"You do not have permission to perform this action."}`))

		_, err := execute(t, bundle, sentry.ActionListIssues, `{"organization_slug":"acme","project_slug":"web"}`)
		execErr := requireExecError(t, err)
		require.Equal(t, "forbidden", execErr.Code)
		require.False(t, execErr.Retryable)
		require.Contains(t, execErr.Message, `the Sentry token lacks access to project "web" in organization "acme"`)
		require.Contains(t, execErr.Message, "You do not have permission to perform this action.")
	})

	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()

		for name, tc := range map[string]struct {
			action, params, want string
		}{
			"Project":             {sentry.ActionListIssues, `{"organization_slug":"acme","project_slug":"web"}`, `project "web" in organization "acme"`},
			"Issue":               {sentry.ActionGetIssue, `{"issue_id":"4504123456"}`, `issue "4504123456"`},
			"IssueInOrganization": {sentry.ActionListIssueEvents, `{"issue_id":"4504123456","organization_slug":"acme"}`, `issue "4504123456" in organization "acme"`},
			"Event":               {sentry.ActionGetEvent, `{"issue_id":"4504123456","event_id":"abc"}`, `event "abc" of issue "4504123456"`},
			"UpdatedIssue":        {sentry.ActionUpdateIssue, `{"issue_id":"4504123456","status":"resolved"}`, `issue "4504123456"`},
		} {
			bundle := setup(t, answer(http.StatusNotFound, `{"detail":"The requested resource does not exist"}`))

			_, err := execute(t, bundle, tc.action, tc.params)
			execErr := requireExecError(t, err)
			require.Equal(t, "not_found", execErr.Code, name)
			require.False(t, execErr.Retryable, name)
			require.Contains(t, execErr.Message, "Sentry found no "+tc.want, name)
			require.Contains(t, execErr.Message, "The requested resource does not exist", name)
		}
	})

	t.Run("RateLimited", func(t *testing.T) {
		t.Parallel()

		for retryAfter, want := range map[string]time.Duration{
			"7":         7 * time.Second,
			"":          30 * time.Second,
			"soon":      30 * time.Second,
			"0":         30 * time.Second,
			"-5":        30 * time.Second,
			"999999999": time.Hour,
		} {
			bundle := setup(t, answer(http.StatusTooManyRequests,
				`{"detail":"You are attempting to use this endpoint too frequently. Limit is 40 requests in 1 seconds"}`,
				"Retry-After", retryAfter))

			_, err := execute(t, bundle, sentry.ActionGetIssue, `{"issue_id":"1"}`)
			execErr := requireExecError(t, err)
			require.Equal(t, "ratelimited", execErr.Code)
			require.True(t, execErr.Retryable)
			require.Equal(t, want, execErr.RetryAfter, "Retry-After %q", retryAfter)
			require.Contains(t, execErr.Message, "too frequently")
		}
	})

	t.Run("RateLimitedUntilReset", func(t *testing.T) {
		t.Parallel()

		// Sentry's API answers a rate-limited call with 429, a JSON string
		// for a body and no Retry-After: X-Sentry-Rate-Limit-Reset (UTC
		// epoch seconds) says when the window starts again.
		now := time.Date(2025, 6, 2, 10, 0, 0, 500_000_000, time.UTC)
		unix := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
		for reset, want := range map[string]time.Duration{
			unix(59 * time.Second):       59 * time.Second,
			unix(59*time.Second) + ".75": time.Minute,
			unix(time.Second):            time.Second,
			unix(-time.Minute):           time.Second,
			unix(5 * time.Hour):          time.Hour,
			"1e300":                      time.Hour,
			"soon":                       30 * time.Second,
			"NaN":                        30 * time.Second,
			"-1":                         30 * time.Second,
		} {
			server := sentrytest.New(t)
			server.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
				answer(http.StatusTooManyRequests, `"You are attempting to use this endpoint too frequently. Limit is 40 requests in 60 seconds"`,
					"X-Sentry-Rate-Limit-Limit", "40", "X-Sentry-Rate-Limit-Remaining", "0", "X-Sentry-Rate-Limit-Reset", reset,
					"X-Sentry-Rate-Limit-ConcurrentLimit", "25", "X-Sentry-Rate-Limit-ConcurrentRemaining", "24")(w, r)
				return true
			})
			source, err := sentry.New(&sentry.Config{BaseURL: server.URL(), HTTPClient: server.Client(), Now: func() time.Time { return now }})
			require.NoError(t, err)

			_, err = source.Execute(ctx, sentry.ActionGetIssue, json.RawMessage(`{"issue_id":"1"}`), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, "ratelimited", execErr.Code, reset)
			require.True(t, execErr.Retryable, reset)
			require.Equal(t, want, execErr.RetryAfter, "X-Sentry-Rate-Limit-Reset %q", reset)
			require.Contains(t, execErr.Message, "(Sentry said: You are attempting to use this endpoint too frequently.", reset)
		}

		// Retry-After, when Sentry sends one, wins.
		bundle := setup(t, answer(http.StatusTooManyRequests, `{}`, "Retry-After", "4",
			"X-Sentry-Rate-Limit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)))
		_, err := execute(t, bundle, sentry.ActionGetIssue, `{"issue_id":"1"}`)
		require.Equal(t, 4*time.Second, requireExecError(t, err).RetryAfter)
	})

	t.Run("ServerError", func(t *testing.T) {
		t.Parallel()

		for _, status := range []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout} {
			bundle := setup(t, answer(status, `<html>oops</html>`))

			_, err := execute(t, bundle, sentry.ActionUpdateIssue, `{"issue_id":"1","status":"resolved"}`)
			execErr := requireExecError(t, err)
			require.Equal(t, "http_"+strconv.Itoa(status), execErr.Code)
			require.True(t, execErr.Retryable)
			require.Zero(t, execErr.RetryAfter)
			require.Contains(t, execErr.Message, `issue "1"`)
		}
	})

	t.Run("ServerErrorWithRetryAfter", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusServiceUnavailable, `{"detail":"Internal Error"}`, "Retry-After", "12"))

		_, err := execute(t, bundle, sentry.ActionGetIssue, `{"issue_id":"1"}`)
		execErr := requireExecError(t, err)
		require.Equal(t, "http_503", execErr.Code)
		require.True(t, execErr.Retryable)
		require.Equal(t, 12*time.Second, execErr.RetryAfter)
		require.Contains(t, execErr.Message, "Internal Error")
	})

	t.Run("ClientError", func(t *testing.T) {
		t.Parallel()

		for body, wantDetail := range map[string]string{
			`{"detail":"Invalid cursor parameter."}`:                                                "Invalid cursor parameter.",
			`{"detail":{"code":"parse_error","message":"Error parsing search query"}}`:              "Error parsing search query",
			`{"status":["\"closed\" is not a valid choice."],"assignedTo":["Unknown actor input"]}`: `assignedTo: Unknown actor input; status: "closed" is not a valid choice.`,
			`{"detail":"line one\nline two\u0000"}`:                                                 "line one line two",
			`{"detail":"` + strings.Repeat("x", 1000) + `"}`:                                        strings.Repeat("x", 300) + "…",
		} {
			bundle := setup(t, answer(http.StatusBadRequest, body))

			_, err := execute(t, bundle, sentry.ActionListIssues, `{"organization_slug":"acme","project_slug":"web","query":"is:"}`)
			execErr := requireExecError(t, err)
			require.Equal(t, "http_400", execErr.Code, body)
			require.False(t, execErr.Retryable, body)
			require.Contains(t, execErr.Message, "(Sentry said: "+wantDetail+")", body)
			require.NotContains(t, execErr.Message, strings.Repeat("x", 301), body)
		}

		for _, status := range []int{http.StatusMethodNotAllowed, http.StatusConflict, http.StatusGone, http.StatusRequestEntityTooLarge} {
			bundle := setup(t, answer(status, `not json`))

			_, err := execute(t, bundle, sentry.ActionGetIssue, `{"issue_id":"1"}`)
			execErr := requireExecError(t, err)
			require.Equal(t, "http_"+strconv.Itoa(status), execErr.Code)
			require.False(t, execErr.Retryable)
			require.NotContains(t, execErr.Message, "Sentry said")
		}
	})

	t.Run("TokenNeverInErrors", func(t *testing.T) {
		t.Parallel()

		// The loopback Sentry echoes the Authorization header it received
		// into its error detail, at the start and across the cut-off point.
		echo := func(status int, pad int) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				detail, _ := json.Marshal(map[string]string{
					"detail": strings.Repeat("y", pad) + r.Header.Get("Authorization") + " rejected",
				})
				answer(status, string(detail), "Retry-After", "1")(w, r)
			}
		}
		for _, status := range []int{400, 401, 403, 404, 409, 429, 500, 503} {
			for _, pad := range []int{0, 280} {
				bundle := setup(t, echo(status, pad))

				_, err := execute(t, bundle, sentry.ActionUpdateIssue, `{"issue_id":"1","status":"resolved"}`)
				execErr := requireExecError(t, err)
				require.NotContains(t, execErr.Message, testToken[:10], "status %d pad %d", status, pad)
				if pad == 0 {
					require.Contains(t, execErr.Message, "[REDACTED]", status)
				}
			}
		}

		// A token that reached the URL through params is redacted from a
		// network error, raw or escaped.
		bundle := setup(t, answer(http.StatusOK, issueJSON))
		bundle.server.Close()
		for _, issueID := range []string{testToken, testToken + " x?y"} {
			raw, err := json.Marshal(map[string]string{"issue_id": issueID})
			require.NoError(t, err)
			_, err = execute(t, bundle, sentry.ActionGetIssue, string(raw))
			execErr := requireExecError(t, err)
			require.Equal(t, "network_error", execErr.Code)
		}
	})

	t.Run("InvalidResponse", func(t *testing.T) {
		t.Parallel()

		for _, body := range []string{
			`<html><body>Service maintenance</body></html>`,
			``,
			`{"id":"1"`,
		} {
			bundle := setup(t, answer(http.StatusOK, body))

			_, err := execute(t, bundle, sentry.ActionGetIssue, `{"issue_id":"1"}`)
			execErr := requireExecError(t, err)
			require.Equal(t, "invalid_response", execErr.Code, body)
			require.True(t, execErr.Retryable, body)
		}
	})

	t.Run("ResponseTooLarge", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, `{"id":"1","pad":"`+strings.Repeat("a", 1<<20)+`"}`))

		_, err := execute(t, bundle, sentry.ActionGetEvent, `{"issue_id":"1","event_id":"latest"}`)
		execErr := requireExecError(t, err)
		require.Equal(t, "response_too_large", execErr.Code)
		require.False(t, execErr.Retryable)
		require.Contains(t, execErr.Message, `event "latest" of issue "1"`)
	})

	t.Run("ResponseAtLimit", func(t *testing.T) {
		t.Parallel()
		body := `{"id":"1","pad":"` + strings.Repeat("a", 1<<20-len(`{"id":"1","pad":""}`)) + `"}`
		require.Len(t, body, 1<<20)
		bundle := setup(t, answer(http.StatusOK, body))

		res, err := execute(t, bundle, sentry.ActionGetIssue, `{"issue_id":"1"}`)
		require.NoError(t, err)
		require.Len(t, res.Data, 1<<20)
	})

	t.Run("ConnectionDropped", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, func(w http.ResponseWriter, _ *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		})

		_, err := execute(t, bundle, sentry.ActionUpdateIssue, `{"issue_id":"1","status":"resolved"}`)
		execErr := requireExecError(t, err)
		require.Equal(t, "network_error", execErr.Code)
		require.True(t, execErr.Retryable)
		require.Len(t, bundle.recorded(), 1, "the PUT is not resent by net/http")
	})

	t.Run("ConnectionRefused", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, issueJSON))
		bundle.server.Close()

		_, err := execute(t, bundle, sentry.ActionGetIssue, `{"issue_id":"1"}`)
		execErr := requireExecError(t, err)
		require.Equal(t, "network_error", execErr.Code)
		require.True(t, execErr.Retryable)
	})

	t.Run("DeadlineExceeded", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, func(_ http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		})

		ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()

		_, err := bundle.source.Execute(ctx, sentry.ActionGetIssue, json.RawMessage(`{"issue_id":"1"}`), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "timeout", execErr.Code)
		require.True(t, execErr.Retryable)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})

	t.Run("CanceledByCaller", func(t *testing.T) {
		t.Parallel()
		arrived := make(chan struct{})
		bundle := setup(t, func(_ http.ResponseWriter, r *http.Request) {
			close(arrived)
			<-r.Context().Done()
		})

		ctx, cancel := context.WithCancel(ctx)
		defer cancel()

		errc := make(chan error, 1)
		go func() {
			_, err := bundle.source.Execute(ctx, sentry.ActionGetIssue, json.RawMessage(`{"issue_id":"1"}`), execContext())
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
		bundle := setup(t, answer(http.StatusOK, issueJSON))

		_, err := execute(t, bundle, "delete_issue", `{"issue_id":"1"}`)
		require.ErrorIs(t, err, executors.ErrUnknownAction)
		execErr := requireExecError(t, err)
		require.Equal(t, "unknown_action", execErr.Code)
		require.False(t, execErr.Retryable)
		require.Same(t, execErr, executors.Classify(err))
		require.Empty(t, bundle.recorded())
	})

	t.Run("InvalidParams", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, issueJSON))

		for action, paramsList := range map[string][]string{
			sentry.ActionListIssues: {
				``, `null`, `[]`,
				`{"organization_slug":"acme"}`,
				`{"project_slug":"web"}`,
				`{"organization_slug":"acme","project_slug":"web","limit":5}`,
				`{"organization_slug":"acme","project_slug":"web"} {}`,
			},
			sentry.ActionGetIssue:        {`{}`, `{"issue_id":1}`, `{"issue_id":"1","extra":true}`},
			sentry.ActionListIssueEvents: {`{}`, `{"issue_id":""}`},
			sentry.ActionGetEvent:        {`{"issue_id":"1"}`, `{"event_id":"latest"}`},
			sentry.ActionUpdateIssue:     {`{"status":"resolved"}`, `{"issue_id":"1","status":5}`},
		} {
			for _, params := range paramsList {
				_, err := execute(t, bundle, action, params)
				execErr := requireExecError(t, err)
				require.Equal(t, "invalid_params", execErr.Code, "%s %s", action, params)
				require.False(t, execErr.Retryable, "%s %s", action, params)
				require.Contains(t, execErr.Message, action, "%s %s", action, params)
			}
		}
		require.Empty(t, bundle.recorded())
	})

	t.Run("MissingToken", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, issueJSON))

		_, err := bundle.source.Execute(ctx, sentry.ActionGetIssue, json.RawMessage(`{"issue_id":"1"}`), executors.ExecContext{})
		execErr := requireExecError(t, err)
		require.Equal(t, "not_authed", execErr.Code)
		require.False(t, execErr.Retryable)
		require.Empty(t, bundle.recorded())
	})

	t.Run("DefaultHTTPClient", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, issueJSON))

		cfg := (&sentry.Config{BaseURL: bundle.server.URL() + "/"}).WithDefaults()
		t.Cleanup(cfg.HTTPClient.CloseIdleConnections)
		source, err := sentry.New(cfg)
		require.NoError(t, err)

		_, err = source.Execute(ctx, sentry.ActionGetIssue, json.RawMessage(`{"issue_id":"1"}`), execContext())
		require.NoError(t, err)
		require.Equal(t, "/api/0/issues/1/", bundle.only(t).Path)
	})

	t.Run("ConcurrentUse", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, answer(http.StatusOK, issuesPage1, "Link", linkNext))

		const calls = 20
		errs := make(chan error, calls)
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				_, err := execute(t, bundle, sentry.ActionListIssues, `{"organization_slug":"acme","project_slug":"web"}`)
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Len(t, bundle.recorded(), calls)
	})
}

func ptr(s string) *string { return &s }
