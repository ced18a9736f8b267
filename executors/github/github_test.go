package github_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/github"
	"github.com/outboxd/outboxd/executors/github/githubtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testToken has the shape of a fine-grained personal access token.
const testToken = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV"

// now is the clock of sources built by setup.
var now = time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC)

type bundle struct {
	source executors.Source
	gh     *githubtest.Server
}

// setup starts a loopback GitHub with the repository octo/web and a source
// pointed at it.
func setup(t *testing.T) *bundle {
	t.Helper()
	gh := githubtest.New(t)
	gh.AcceptOnly(testToken)
	gh.AddRepo("octo", "web", "ada")
	source, err := github.New(&github.Config{BaseURL: gh.URL(), HTTPClient: gh.Client(), Now: func() time.Time { return now }})
	require.NoError(t, err)
	return &bundle{source: source, gh: gh}
}

// key is an invocation id: a UUIDv7 of now, as the worker passes.
func key(t *testing.T) string {
	t.Helper()
	id, err := uuid.NewV7()
	require.NoError(t, err)
	return id.String()
}

// keyAt is an invocation id (a UUIDv7) made at at.
func keyAt(t *testing.T, at time.Time) string {
	t.Helper()
	id, err := uuid.NewV7()
	require.NoError(t, err)
	ms := uint64(at.UnixMilli())
	for i := range 6 {
		id[i] = byte(ms >> (40 - 8*i))
	}
	return id.String()
}

func execContext(key string) executors.ExecContext {
	return executors.ExecContext{Token: testToken, OrganizationID: "org_1", SessionID: "sess_1", IdempotencyKey: key}
}

func (b *bundle) execute(t *testing.T, ec executors.ExecContext, action, params string) (executors.Result, error) {
	t.Helper()
	return b.source.Execute(t.Context(), action, json.RawMessage(params), ec)
}

// requireExecError asserts err is a classified failure free of the token and
// returns its classification.
func requireExecError(t *testing.T, err error) *executors.Error {
	t.Helper()
	require.Error(t, err)
	require.NotContains(t, err.Error(), testToken)
	var execErr *executors.Error
	require.ErrorAs(t, err, &execErr)
	return execErr
}

// requireCall checks the common shape of a call: method, path, GitHub's
// headers and the token.
func requireCall(t *testing.T, req githubtest.Request, method, path string) {
	t.Helper()
	require.Equal(t, method, req.Method)
	require.Equal(t, "/api/v3"+path, req.Path)
	require.Equal(t, "Bearer "+testToken, req.Header.Get("Authorization"))
	require.Equal(t, "application/vnd.github+json", req.Header.Get("Accept"))
	require.Equal(t, "2022-11-28", req.Header.Get("X-GitHub-Api-Version"))
	require.Equal(t, "outboxd", req.Header.Get("User-Agent"))
	require.Empty(t, req.Header.Get("Idempotency-Key"), "net/http would resend a POST with it")
	if method == http.MethodGet {
		require.Empty(t, req.Body)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()

	cfg := (&github.Config{}).WithDefaults()
	require.Equal(t, "https://api.github.com", cfg.BaseURL)
	require.NotNil(t, cfg.HTTPClient)
	require.Zero(t, cfg.HTTPClient.Timeout, "deadlines come from ctx")
	require.Equal(t, "https://ghe.example.com/api/v3", (&github.Config{BaseURL: "https://ghe.example.com/api/v3/"}).WithDefaults().BaseURL)

	source, err := github.New(nil)
	require.NoError(t, err)
	require.Equal(t, "github", source.ID())

	for _, baseURL := range []string{
		"api.github.com", "ftp://api.github.com", "https://", "https://api.github.com?x=1",
		"https://api.github.com?", "https://api.github.com#x", "https://user:pass@api.github.com",
	} {
		_, err := github.New(&github.Config{BaseURL: baseURL})
		require.Error(t, err, baseURL)
	}

	require.Equal(t, "github", github.Provider.ID)
	require.Equal(t, github.DefaultBaseURL, github.Provider.DefaultBaseURL)
	require.Equal(t, "github.api", github.Provider.Bucket.Name)
	built, err := github.Provider.New(&executors.ProviderConfig{BaseURL: "http://127.0.0.1:1/api/v3"})
	require.NoError(t, err)
	require.Equal(t, "github", built.ID())
	_, err = github.Provider.New(&executors.ProviderConfig{BaseURL: "ftp://x"})
	require.Error(t, err)
}

func TestListActions(t *testing.T) {
	t.Parallel()

	source, err := github.New(nil)
	require.NoError(t, err)
	defs, err := source.ListActions(t.Context(), executors.ExecContext{})
	require.NoError(t, err)
	byID := map[string]executors.Definition{}
	for _, d := range defs {
		byID[d.ID] = d
	}
	tiers := map[string]executors.Tier{}
	for id, d := range byID {
		tiers[id] = d.Tier
		require.NotEmpty(t, d.Description, id)
		var schema struct {
			AdditionalProperties *bool                      `json:"additionalProperties"`
			Required             []string                   `json:"required"`
			Properties           map[string]json.RawMessage `json:"properties"`
		}
		require.NoError(t, json.Unmarshal(d.Params, &schema), id)
		require.NotNil(t, schema.AdditionalProperties, id)
		require.False(t, *schema.AdditionalProperties, id)
		for _, name := range schema.Required {
			require.Contains(t, schema.Properties, name, id)
		}
		for name, raw := range schema.Properties {
			var prop struct {
				Description string `json:"description"`
			}
			require.NoError(t, json.Unmarshal(raw, &prop))
			require.NotEmpty(t, prop.Description, id+"."+name)
		}
	}
	require.Equal(t, map[string]executors.Tier{
		"create_issue":       executors.TierR2,
		"comment_on_issue":   executors.TierR2,
		"get_issue":          executors.TierR1,
		"list_pull_requests": executors.TierR1,
		"get_pull_request":   executors.TierR1,
	}, tiers)

	v := executors.NewValidator()
	fields := func(action, params string) []string {
		errs, err := v.Validate(byID[action].Params, json.RawMessage(params))
		require.NoError(t, err)
		out := []string{}
		for _, e := range errs {
			out = append(out, e.Field)
		}
		return out
	}
	for action, cases := range map[string]map[string][]string{
		"create_issue": {
			`{"owner":"octo","repo":"web","title":"Crash"}`:                                                                  {},
			`{"owner":"octo","repo":".github","title":"Crash"}`:                                                              {},
			`{"owner":"octo","repo":"...","title":"Crash"}`:                                                                  {"repo"},
			`{"owner":"octo","repo":"web.js","title":"Crash","body":"x","labels":["bug"],"assignees":["ada"],"milestone":3}`: {},
			`{"owner":"octo","repo":"web"}`:                                                                                  {"title"},
			`{"owner":"octo/x","repo":"..","title":"Crash"}`:                                                                 {"owner", "repo"},
			`{"owner":"octo","repo":"web","title":""}`:                                                                       {"title"},
			`{"owner":"octo","repo":"web","title":"x","milestone":0}`:                                                        {"milestone"},
			`{"owner":"octo","repo":"web","title":"x","labels":["a","a"]}`:                                                   {"labels"},
			`{"owner":"octo","repo":"web","title":"x","assignees":["ada",".."]}`:                                             {"assignees/1"},
			`{"owner":"octo","repo":"web","title":"x","assignees":["ada","octo/x"]}`:                                         {"assignees/1"},
			`{"owner":"octo","repo":"web","title":"x","assignees":["a-b","-a","a-","a--b","a_b"]}`:                           {"assignees/1", "assignees/2", "assignees/3", "assignees/4"},
			`{"owner":"octo","repo":"web","title":"x","assignees":["` + strings.Repeat("a", 39) + `"]}`:                      {},
			`{"owner":"octo","repo":"web","title":"x","assignees":["` + strings.Repeat("a", 40) + `"]}`:                      {"assignees/0"},
			`{"owner":"octo","repo":"web","title":"x","state":"closed"}`:                                                     {"state"},
			`{"owner":"octo","repo":"web","title":"` + strings.Repeat("x", 257) + `"}`:                                       {"title"},
		},
		"comment_on_issue": {
			`{"owner":"octo","repo":"web","issue_number":1,"body":"hi"}`:   {},
			`{"owner":"octo","repo":"web","issue_number":0,"body":"hi"}`:   {"issue_number"},
			`{"owner":"octo","repo":"web","issue_number":"1","body":"hi"}`: {"issue_number"},
			`{"owner":"octo","repo":"web","issue_number":1,"body":""}`:     {"body"},
		},
		"get_issue": {
			`{"owner":"octo","repo":"web","issue_number":1}`: {},
			`{"owner":"octo","repo":"web"}`:                  {"issue_number"},
		},
		"get_pull_request": {
			`{"owner":"octo","repo":"web","pull_number":2}`:  {},
			`{"owner":"octo","repo":"web","issue_number":2}`: {"issue_number", "pull_number"},
		},
		"list_pull_requests": {
			`{"owner":"octo","repo":"web"}`: {},
			`{"owner":"octo","repo":"web","state":"all","head":"octo:fix","base":"main","sort":"updated","direction":"asc","per_page":100,"page":2}`: {},
			`{"owner":"octo","repo":"web","state":"merged"}`: {"state"},
			`{"owner":"octo","repo":"web","per_page":101}`:   {"per_page"},
			`{"owner":"octo","repo":"web","page":0}`:         {"page"},
		},
	} {
		for params, want := range cases {
			require.ElementsMatch(t, want, fields(action, params), "%s %s", action, params)
		}
	}
}

func TestCreateIssue(t *testing.T) {
	t.Parallel()

	t.Run("Creates", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		k := key(t)
		res, err := b.execute(t, execContext(k), github.ActionCreateIssue,
			`{"owner":"octo","repo":"web","title":"Checkout fails","body":"Seen on Safari.","labels":["bug"],"assignees":["ada"],"milestone":2}`)
		require.NoError(t, err)
		require.Equal(t, "octo/web#1", res.ProviderRef)
		require.False(t, res.Conflict)
		var issue map[string]any
		require.NoError(t, json.Unmarshal(res.Data, &issue))
		require.Equal(t, float64(1), issue["number"])
		require.Equal(t, "https://github.com/octo/web/issues/1", issue["html_url"])

		reqs := b.gh.Requests()
		require.Len(t, reqs, 1, "a first attempt does not search")
		requireCall(t, reqs[0], http.MethodPost, "/repos/octo/web/issues")
		require.Equal(t, k, reqs[0].Header.Get("X-Outboxd-Idempotency-Key"))
		require.JSONEq(t, `{"title":"Checkout fails","body":"Seen on Safari.\n\n<!-- outboxd:`+k+` -->",`+
			`"labels":["bug"],"assignees":["ada"],"milestone":2}`, string(reqs[0].Body))
		issues := b.gh.Issues("octo", "web")
		require.Len(t, issues, 1)
		require.Equal(t, []string{"ada"}, issues[0].Assignees)
	})

	t.Run("WithoutBodyTheMarkerIsTheBody", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		k := key(t)
		_, err := b.execute(t, execContext(k), github.ActionCreateIssue, `{"owner":"octo","repo":"web","title":"Crash"}`)
		require.NoError(t, err)
		require.Equal(t, "<!-- outboxd:"+k+" -->", b.gh.Issues("octo", "web")[0].Body)
	})

	t.Run("LostAnswerIsFoundOnRetry", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// Someone else's recent issue, and one by another invocation.
		b.gh.SeedIssue("octo", "web", newIssue("Unrelated", "no marker"))
		b.gh.SeedIssue("octo", "web", newIssue("Other invocation", "x\n\n<!-- outboxd:"+key(t)+" -->"))
		b.gh.LoseNextCreates(1)
		k := key(t)
		params := `{"owner":"octo","repo":"web","title":"Deploy stuck"}`

		_, err := b.execute(t, execContext(k), github.ActionCreateIssue, params)
		e := requireExecError(t, err)
		require.Equal(t, "http_502", e.Code)
		require.True(t, e.Retryable)
		require.Len(t, b.gh.Issues("octo", "web"), 3, "GitHub created it before the answer was lost")

		ec := execContext(k)
		ec.Retry = true
		res, err := b.execute(t, ec, github.ActionCreateIssue, params)
		require.NoError(t, err)
		require.True(t, res.Conflict)
		require.Equal(t, "octo/web#3", res.ProviderRef)
		var issue map[string]any
		require.NoError(t, json.Unmarshal(res.Data, &issue))
		require.Equal(t, "Deploy stuck", issue["title"])
		require.Len(t, b.gh.Issues("octo", "web"), 3, "the retry created nothing")

		reqs := b.gh.Requests()
		require.Len(t, reqs, 2)
		search := reqs[1]
		requireCall(t, search, http.MethodGet, "/repos/octo/web/issues")
		id := uuid.MustParse(k)
		sec, nsec := id.Time().UnixTime()
		require.Equal(t, url.Values{
			"state": {"all"}, "sort": {"created"}, "direction": {"desc"}, "per_page": {"30"}, "page": {"1"},
			"since": {time.Unix(sec, nsec).Add(-10 * time.Minute).UTC().Format(time.RFC3339)},
		}, search.Query)
	})

	t.Run("RetryCreatesWhenNothingWasCreated", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.gh.SeedIssue("octo", "web", newIssue("Unrelated", "no marker"))
		ec := execContext(key(t))
		ec.Retry = true
		res, err := b.execute(t, ec, github.ActionCreateIssue, `{"owner":"octo","repo":"web","title":"Deploy stuck"}`)
		require.NoError(t, err)
		require.False(t, res.Conflict)
		require.Equal(t, "octo/web#2", res.ProviderRef)
		reqs := b.gh.Requests()
		require.Len(t, reqs, 2)
		require.Equal(t, http.MethodGet, reqs[0].Method)
		require.Equal(t, http.MethodPost, reqs[1].Method)
	})

	t.Run("SearchStopsAtOlderIssues", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// Issues created long before the invocation but updated since: the
		// since filter keeps them, their creation time ends the search.
		old := time.Now().Add(-48 * time.Hour).UTC().Truncate(time.Second)
		for i := range 70 {
			is := newIssue("Old "+strconv.Itoa(i), "")
			is.CreatedAt, is.UpdatedAt = old.Add(time.Duration(i)*time.Second), time.Now().UTC()
			b.gh.SeedIssue("octo", "web", is)
		}
		ec := execContext(key(t))
		ec.Retry = true
		_, err := b.execute(t, ec, github.ActionCreateIssue, `{"owner":"octo","repo":"web","title":"New"}`)
		require.NoError(t, err)
		reqs := b.gh.Requests()
		require.Len(t, reqs, 2, "one page read, then the create")
		require.Equal(t, http.MethodPost, reqs[1].Method)
	})

	t.Run("SearchGivesUpAtItsBound", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for i := range 20*30 + 1 {
			b.gh.SeedIssue("octo", "web", newIssue("Busy "+strconv.Itoa(i), ""))
		}
		// A key that is no UUIDv7 gives no time to stop at.
		ec := execContext("inv/with spaces-->")
		ec.Retry = true
		_, err := b.execute(t, ec, github.ActionCreateIssue, `{"owner":"octo","repo":"web","title":"New"}`)
		e := requireExecError(t, err)
		require.Equal(t, "idempotency_unverified", e.Code)
		require.False(t, e.Retryable)
		reqs := b.gh.Requests()
		require.Len(t, reqs, 20, "twenty pages, no create")
		require.NotContains(t, reqs[0].Query, "since")
		require.Len(t, b.gh.Issues("octo", "web"), 601)
	})

	t.Run("SearchStartsAtTheFirstAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// Made three days ago, approved and first run a minute ago: the
		// repository's issues of the days between cannot be the
		// invocation's, and there are more of them than the look-up reads.
		made := time.Now().Add(-72 * time.Hour)
		for i := range 20*30 + 1 {
			is := newIssue("Busy "+strconv.Itoa(i), "")
			is.CreatedAt = made.Add(time.Hour + time.Duration(i)*time.Second).UTC().Truncate(time.Second)
			is.UpdatedAt = is.CreatedAt
			b.gh.SeedIssue("octo", "web", is)
		}
		ec := execContext(keyAt(t, made))
		ec.Retry = true
		ec.FirstStartedAt = time.Now().Add(-time.Minute)
		res, err := b.execute(t, ec, github.ActionCreateIssue, `{"owner":"octo","repo":"web","title":"New"}`)
		require.NoError(t, err)
		require.False(t, res.Conflict)
		reqs := b.gh.Requests()
		require.Len(t, reqs, 2, "one page read, then the create")
		require.Equal(t, ec.FirstStartedAt.Add(-10*time.Minute).UTC().Format(time.RFC3339), reqs[0].Query.Get("since"))
		require.Equal(t, http.MethodPost, reqs[1].Method)
	})

	t.Run("UnsafeKeyIsHashed", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.execute(t, execContext("a --> b"), github.ActionCreateIssue, `{"owner":"octo","repo":"web","title":"New"}`)
		require.NoError(t, err)
		body := b.gh.Issues("octo", "web")[0].Body
		require.Regexp(t, `^<!-- outboxd:sha256-[0-9a-f]{64} -->$`, body)
	})

	t.Run("NoKeyNoMarkerNoSearch", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ec := execContext("")
		ec.Retry = true
		_, err := b.execute(t, ec, github.ActionCreateIssue, `{"owner":"octo","repo":"web","title":"New","body":"b"}`)
		require.NoError(t, err)
		require.Len(t, b.gh.Requests(), 1)
		require.Equal(t, "b", b.gh.Issues("octo", "web")[0].Body)
	})
}

// newIssue is an issue to seed, with a title and body.
func newIssue(title, body string) githubtest.Issue {
	return githubtest.Issue{Title: title, Body: body}
}

func TestCommentOnIssue(t *testing.T) {
	t.Parallel()

	t.Run("CommentsAndRetriesFindIt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		n := b.gh.SeedIssue("octo", "web", newIssue("Crash", ""))
		b.gh.LoseNextCreates(1)
		k := key(t)
		params := `{"owner":"octo","repo":"web","issue_number":` + strconv.Itoa(n) + `,"body":"Looking into it."}`

		_, err := b.execute(t, execContext(k), github.ActionCommentOnIssue, params)
		require.True(t, requireExecError(t, err).Retryable)
		comments := b.gh.Comments("octo", "web", n)
		require.Len(t, comments, 1)
		require.Equal(t, "Looking into it.\n\n<!-- outboxd:"+k+" -->", comments[0].Body)

		ec := execContext(k)
		ec.Retry = true
		res, err := b.execute(t, ec, github.ActionCommentOnIssue, params)
		require.NoError(t, err)
		require.True(t, res.Conflict)
		require.Equal(t, strconv.FormatInt(comments[0].ID, 10), res.ProviderRef)
		require.Len(t, b.gh.Comments("octo", "web", n), 1, "posted once")

		reqs := b.gh.Requests()
		require.Len(t, reqs, 2)
		requireCall(t, reqs[0], http.MethodPost, "/repos/octo/web/issues/1/comments")
		requireCall(t, reqs[1], http.MethodGet, "/repos/octo/web/issues/1/comments")
		require.Equal(t, "100", reqs[1].Query.Get("per_page"))
		require.NotEmpty(t, reqs[1].Query.Get("since"))

		// A new invocation comments again.
		res, err = b.execute(t, execContext(key(t)), github.ActionCommentOnIssue, params)
		require.NoError(t, err)
		require.False(t, res.Conflict)
		require.Len(t, b.gh.Comments("octo", "web", n), 2)
	})

	t.Run("RetryPagesThroughComments", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		n := b.gh.SeedIssue("octo", "web", newIssue("Busy", ""))
		for i := range 150 {
			_, err := b.execute(t, execContext(key(t)), github.ActionCommentOnIssue,
				`{"owner":"octo","repo":"web","issue_number":1,"body":"c`+strconv.Itoa(i)+`"}`)
			require.NoError(t, err)
		}
		ec := execContext(key(t))
		ec.Retry = true
		before := len(b.gh.Requests())
		res, err := b.execute(t, ec, github.ActionCommentOnIssue, `{"owner":"octo","repo":"web","issue_number":1,"body":"last"}`)
		require.NoError(t, err)
		require.False(t, res.Conflict)
		reqs := b.gh.Requests()[before:]
		require.Len(t, reqs, 3, "two pages of comments, then the create")
		require.Equal(t, "2", reqs[1].Query.Get("page"))
		require.Len(t, b.gh.Comments("octo", "web", n), 151)
	})

	t.Run("MissingIssue", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.execute(t, execContext(key(t)), github.ActionCommentOnIssue, `{"owner":"octo","repo":"web","issue_number":9,"body":"x"}`)
		e := requireExecError(t, err)
		require.Equal(t, "not_found", e.Code)
		require.False(t, e.Retryable)
		require.Contains(t, e.Message, "issue #9 of octo/web")
	})
}

func TestReads(t *testing.T) {
	t.Parallel()
	b := setup(t)
	merged := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	b.gh.SeedIssue("octo", "web", newIssue("Crash on login", "Steps: ..."))
	for i, pr := range []githubtest.PullRequest{
		{Head: "fix-login", Base: "main", HeadSHA: strings.Repeat("1", 40)},
		{Head: "docs", Base: "main", Draft: true},
		{Head: "old", Base: "release", MergedAt: &merged},
	} {
		is := newIssue("PR "+strconv.Itoa(i), "body")
		is.PullRequest = &pr
		is.Labels = []string{"area/web"}
		if pr.MergedAt != nil {
			is.State = "closed"
		}
		b.gh.SeedIssue("octo", "web", is)
	}
	ec := execContext(key(t))

	t.Run("GetIssue", func(t *testing.T) {
		res, err := b.execute(t, ec, github.ActionGetIssue, `{"owner":"octo","repo":"web","issue_number":1}`)
		require.NoError(t, err)
		require.Empty(t, res.ProviderRef)
		var issue map[string]any
		require.NoError(t, json.Unmarshal(res.Data, &issue))
		require.Equal(t, "Crash on login", issue["title"])
		require.Equal(t, "open", issue["state"])
		reqs := b.gh.Requests()
		requireCall(t, reqs[len(reqs)-1], http.MethodGet, "/repos/octo/web/issues/1")
		require.Empty(t, reqs[len(reqs)-1].Header.Get("X-Outboxd-Idempotency-Key"))
	})

	t.Run("GetPullRequest", func(t *testing.T) {
		res, err := b.execute(t, ec, github.ActionGetPullRequest, `{"owner":"octo","repo":"web","pull_number":2}`)
		require.NoError(t, err)
		var pr map[string]any
		require.NoError(t, json.Unmarshal(res.Data, &pr))
		require.Equal(t, "PR 0", pr["title"])
		require.Equal(t, "fix-login", pr["head"].(map[string]any)["ref"])
		reqs := b.gh.Requests()
		requireCall(t, reqs[len(reqs)-1], http.MethodGet, "/repos/octo/web/pulls/2")

		_, err = b.execute(t, ec, github.ActionGetPullRequest, `{"owner":"octo","repo":"web","pull_number":1}`)
		require.Equal(t, "not_found", requireExecError(t, err).Code, "an issue is not a pull request")
	})

	t.Run("ListPullRequests", func(t *testing.T) {
		res, err := b.execute(t, ec, github.ActionListPullRequests, `{"owner":"octo","repo":"web","per_page":1}`)
		require.NoError(t, err)
		var page struct {
			PullRequests []map[string]any `json:"pull_requests"`
			NextPage     *int             `json:"next_page"`
		}
		require.NoError(t, json.Unmarshal(res.Data, &page))
		require.Len(t, page.PullRequests, 1)
		require.Equal(t, map[string]any{
			"number": float64(3), "title": "PR 1", "state": "open", "draft": true, "user": "octo",
			"head_ref": "docs", "head_sha": strings.Repeat("a", 40), "base_ref": "main", "labels": []any{"area/web"},
			"html_url": "https://github.com/octo/web/pull/3", "created_at": page.PullRequests[0]["created_at"],
			"updated_at": page.PullRequests[0]["updated_at"], "closed_at": nil, "merged_at": nil,
		}, page.PullRequests[0], "newest open first, summarised")
		require.NotNil(t, page.NextPage)
		require.Equal(t, 2, *page.NextPage)
		reqs := b.gh.Requests()
		requireCall(t, reqs[len(reqs)-1], http.MethodGet, "/repos/octo/web/pulls")
		require.Equal(t, url.Values{"per_page": {"1"}}, reqs[len(reqs)-1].Query)

		res, err = b.execute(t, ec, github.ActionListPullRequests, `{"owner":"octo","repo":"web","per_page":1,"page":2}`)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(res.Data, &page))
		require.Equal(t, float64(2), page.PullRequests[0]["number"])
		require.Nil(t, page.NextPage, "the last page")

		res, err = b.execute(t, ec, github.ActionListPullRequests,
			`{"owner":"octo","repo":"web","state":"all","base":"release","sort":"updated","direction":"asc"}`)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(res.Data, &page))
		require.Len(t, page.PullRequests, 1)
		require.Equal(t, "old", page.PullRequests[0]["head_ref"])
		require.Equal(t, "2025-05-01T12:00:00Z", page.PullRequests[0]["merged_at"])
		reqs = b.gh.Requests()
		require.Equal(t, url.Values{"state": {"all"}, "base": {"release"}, "sort": {"updated"}, "direction": {"asc"}}, reqs[len(reqs)-1].Query)
	})

	t.Run("PathSegmentsAreEscaped", func(t *testing.T) {
		// The schema refuses such names; Execute must not trust it.
		_, err := b.execute(t, ec, github.ActionGetIssue, `{"owner":"octo","repo":"web?x=1#","issue_number":1}`)
		require.Equal(t, "not_found", requireExecError(t, err).Code)
		reqs := b.gh.Requests()
		require.Equal(t, "/api/v3/repos/octo/web%3Fx=1%23/issues/1", reqs[len(reqs)-1].Path)
	})
}

func TestErrors(t *testing.T) {
	t.Parallel()

	// answering sets up a loopback GitHub that answers every call with
	// status, body and headers.
	answering := func(t *testing.T, status int, body string, headers ...string) *bundle {
		t.Helper()
		b := setup(t)
		b.gh.Intercept(func(w http.ResponseWriter, _ *http.Request) bool {
			for i := 0; i+1 < len(headers); i += 2 {
				w.Header().Set(headers[i], headers[i+1])
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
			return true
		})
		return b
	}
	get := `{"owner":"octo","repo":"web","issue_number":1}`
	reset := strconv.FormatInt(now.Add(90*time.Second).Unix(), 10)

	for _, tt := range []struct {
		name       string
		status     int
		body       string
		headers    []string
		code       string
		retryable  bool
		retryAfter time.Duration
		message    string
	}{
		{name: "Unauthorized", status: 401, body: `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest","status":"401"}`,
			code: executors.CodeUnauthorized, message: "GitHub rejected the token (HTTP 401); reconnect GitHub (GitHub said: Bad credentials)"},
		{name: "NotFound", status: 404, body: `{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}`,
			code: "not_found", message: "GitHub found no issue #1 of octo/web, or the token cannot see it (HTTP 404); check the owner, repository and number (GitHub said: Not Found)"},
		{name: "Gone", status: 410, body: `{"message":"Issues are disabled for this repo"}`, code: "gone"},
		{name: "ValidationFailed", status: 422,
			body: `{"message":"Validation Failed","errors":[{"value":"bob","resource":"Issue","field":"assignees","code":"invalid"}],"status":"422"}`,
			code: "validation_failed", message: "GitHub refused the request about issue #1 of octo/web as invalid (HTTP 422); check the params (GitHub said: Validation Failed: assignees invalid)"},
		{name: "ForbiddenIsPermanent", status: 403, body: `{"message":"Resource not accessible by personal access token"}`,
			headers: []string{"X-RateLimit-Remaining", "4990"}, code: "forbidden"},
		{name: "PrimaryLimitWaitsForReset", status: 403, body: `{"message":"API rate limit exceeded for user ID 1."}`,
			headers: []string{"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", reset}, code: "rate_limited", retryable: true, retryAfter: 91 * time.Second},
		{name: "PrimaryLimitAs429", status: 429, body: `{"message":"API rate limit exceeded"}`,
			headers: []string{"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", reset}, code: "rate_limited", retryable: true, retryAfter: 91 * time.Second},
		{name: "PrimaryLimitResetPassed", status: 403, body: `{"message":"API rate limit exceeded"}`,
			headers: []string{"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(now.Add(-time.Minute).Unix(), 10)},
			code:    "rate_limited", retryable: true, retryAfter: time.Second},
		{name: "PrimaryLimitFarReset", status: 403, body: `{}`,
			headers: []string{"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(now.Add(5*time.Hour).Unix(), 10)},
			code:    "rate_limited", retryable: true, retryAfter: time.Hour},
		{name: "SecondaryWithRetryAfter", status: 403,
			body:    `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`,
			headers: []string{"Retry-After", "17", "X-RateLimit-Remaining", "4000"}, code: "secondary_rate_limited", retryable: true, retryAfter: 17 * time.Second},
		{name: "Secondary429WithRetryAfter", status: 429, body: `{"message":"secondary"}`,
			headers: []string{"Retry-After", "5"}, code: "secondary_rate_limited", retryable: true, retryAfter: 5 * time.Second},
		{name: "SecondaryWithoutHeadersWaitsAMinute", status: 403,
			body: `{"message":"You have exceeded a secondary rate limit and have been temporarily blocked from content creation."}`,
			code: "secondary_rate_limited", retryable: true, retryAfter: time.Minute},
		{name: "TooManyWithoutHeadersWaitsAMinute", status: 429, body: ``, code: "secondary_rate_limited", retryable: true, retryAfter: time.Minute},
		{name: "ServerError", status: 500, body: `{"message":"Server Error"}`, code: "http_500", retryable: true},
		{name: "UnavailableWithRetryAfter", status: 503, body: ``, headers: []string{"Retry-After", "12"}, code: "http_503", retryable: true, retryAfter: 12 * time.Second},
		{name: "OtherClientError", status: 409, body: `{"message":"Conflict"}`, code: "http_409"},
		{name: "TokenEchoedIsScrubbed", status: 422, body: `{"message":"bad token ` + testToken + `"}`, code: "validation_failed",
			message: "GitHub refused the request about issue #1 of octo/web as invalid (HTTP 422); check the params (GitHub said: bad token [REDACTED])"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := answering(t, tt.status, tt.body, tt.headers...)
			_, err := b.execute(t, execContext(key(t)), github.ActionGetIssue, get)
			e := requireExecError(t, err)
			require.Equal(t, tt.code, e.Code)
			require.Equal(t, tt.retryable, e.Retryable)
			require.Equal(t, tt.retryAfter, e.RetryAfter)
			if tt.message != "" {
				require.Equal(t, tt.message, e.Message)
			}
		})
	}

	t.Run("SuccessThatIsNotJSON", func(t *testing.T) {
		t.Parallel()
		b := answering(t, 200, `<html>`)
		_, err := b.execute(t, execContext(key(t)), github.ActionGetIssue, get)
		e := requireExecError(t, err)
		require.Equal(t, "invalid_response", e.Code)
		require.True(t, e.Retryable)
	})

	t.Run("CreatedWithoutNumberIsRetryable", func(t *testing.T) {
		t.Parallel()
		b := answering(t, 201, `{}`)
		_, err := b.execute(t, execContext(key(t)), github.ActionCreateIssue, `{"owner":"octo","repo":"web","title":"x"}`)
		e := requireExecError(t, err)
		require.Equal(t, "invalid_response", e.Code)
		require.True(t, e.Retryable, "a retry finds the issue by its marker")
	})

	t.Run("RateLimitedSearchIsRetryable", func(t *testing.T) {
		t.Parallel()
		b := answering(t, 429, `{}`, "Retry-After", "3")
		ec := execContext(key(t))
		ec.Retry = true
		_, err := b.execute(t, ec, github.ActionCreateIssue, `{"owner":"octo","repo":"web","title":"x"}`)
		e := requireExecError(t, err)
		require.Equal(t, 3*time.Second, e.RetryAfter)
		require.Len(t, b.gh.Requests(), 1, "no create after a failed search")
	})

	t.Run("WrongToken", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ec := execContext(key(t))
		ec.Token = "ghp_wrong"
		_, err := b.execute(t, ec, github.ActionGetIssue, get)
		require.Equal(t, executors.CodeUnauthorized, requireExecError(t, err).Code)
	})

	t.Run("NoToken", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ec := execContext(key(t))
		ec.Token = ""
		_, err := b.execute(t, ec, github.ActionGetIssue, get)
		require.Equal(t, "not_authed", requireExecError(t, err).Code)
		require.Empty(t, b.gh.Requests())
	})

	t.Run("NetworkError", func(t *testing.T) {
		t.Parallel()
		source, err := github.New(&github.Config{BaseURL: "http://127.0.0.1:1/api/v3"})
		require.NoError(t, err)
		_, err = source.Execute(t.Context(), github.ActionGetIssue, json.RawMessage(get), execContext(key(t)))
		e := requireExecError(t, err)
		require.Equal(t, "network_error", e.Code)
		require.True(t, e.Retryable)
	})

	t.Run("Canceled", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := b.source.Execute(ctx, github.ActionGetIssue, json.RawMessage(get), execContext(key(t)))
		require.ErrorIs(t, err, context.Canceled)
	})

	t.Run("UnknownAction", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.execute(t, execContext(key(t)), "delete_repo", `{}`)
		require.True(t, errors.Is(err, executors.ErrUnknownAction))
	})

	t.Run("InvalidParamsSendNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for action, params := range map[string]string{
			github.ActionCreateIssue:      `{"owner":"octo","repo":"web"}`,
			github.ActionCommentOnIssue:   `{"owner":"octo","repo":"web","issue_number":1,"body":"x","extra":1}`,
			github.ActionGetIssue:         `{"owner":"..","repo":"web","issue_number":1}`,
			github.ActionGetPullRequest:   `{"owner":"octo","repo":"web","pull_number":0}`,
			github.ActionListPullRequests: `{"owner":"octo","repo":"web","state":"merged"}`,
		} {
			_, err := b.execute(t, execContext(key(t)), action, params)
			e := requireExecError(t, err)
			require.Equal(t, "invalid_params", e.Code, action)
			require.False(t, e.Retryable)
		}
		_, err := b.execute(t, execContext(key(t)), github.ActionGetIssue, get+`{}`)
		require.Equal(t, "invalid_params", requireExecError(t, err).Code)
		require.Empty(t, b.gh.Requests())
	})
}
