package api_test

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/github/githubtest"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/worker"
)

// startGitHub starts a loopback GitHub with the repository octo/web
// accepting token, and outboxd pointed at it with token stored.
func startGitHub(t *testing.T, token string, opts *apptest.Options) (*apptest.Bundle, *githubtest.Server) {
	t.Helper()
	gh := githubtest.New(t)
	gh.AcceptOnly(token)
	gh.AddRepo("octo", "web", "ada")
	opts.BaseURLs = map[string]string{"github": gh.URL()}
	b := apptest.Start(t, opts)
	b.StoreToken("github", token, "")
	return b, gh
}

func TestGitHub_ThroughPipeline(t *testing.T) {
	t.Parallel()
	const token = "ghp_pipeline0123456789abcdefghijklmnopqrs"
	b, gh := startGitHub(t, token, &apptest.Options{})
	issue := gh.SeedIssue("octo", "web", githubtest.Issue{Title: "Checkout fails on Safari"})
	gh.SeedIssue("octo", "web", githubtest.Issue{Title: "Bump deps", PullRequest: &githubtest.PullRequest{Head: "deps", Base: "main"}})

	inv, result := completed(t, invokeAs(b, b.Sandbox(), "github", "get_issue",
		map[string]any{"owner": "octo", "repo": "web", "issue_number": issue}))
	require.Equal(t, "allow", inv["mode"])
	require.Equal(t, "read", inv["risk_level"])
	require.Equal(t, "R1", inv["risk_tier"])
	require.Equal(t, "Checkout fails on Safari", result["title"])

	_, result = completed(t, invokeAs(b, b.Sandbox(), "github", "list_pull_requests", map[string]any{"owner": "octo", "repo": "web"}))
	pulls := result["pull_requests"].([]any)
	require.Len(t, pulls, 1)
	require.Equal(t, "deps", pulls[0].(map[string]any)["head_ref"])
	require.Nil(t, result["next_page"])

	// Creates wait for a human by default.
	r := invokeAs(b, b.Sandbox(), "github", "create_issue", map[string]any{"owner": "octo", "repo": "web", "title": "Deploys hang"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	require.Equal(t, "require_approval", r.Body["invocation"].(map[string]any)["mode"])
	id := r.Body["invocation_id"].(string)
	require.Len(t, gh.Issues("octo", "web"), 2, "nothing reaches GitHub before approval")
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"}).Status)
	done := b.WaitStatus(id, invocation.StatusCompleted, 10*time.Second)
	require.Equal(t, "octo/web#3", done["provider_ref"])
	require.Equal(t, false, done["conflict"])
	issues := gh.Issues("octo", "web")
	require.Len(t, issues, 3)
	require.Equal(t, "<!-- outboxd:"+id+" -->", issues[2].Body, "the marker names the invocation")

	b.SetModes(map[string]string{"github:comment_on_issue": "allow"})
	inv, result = completed(t, invokeAs(b, b.Sandbox(), "github", "comment_on_issue",
		map[string]any{"owner": "octo", "repo": "web", "issue_number": issue, "body": "On it."}))
	comments := gh.Comments("octo", "web", issue)
	require.Len(t, comments, 1)
	require.Equal(t, strconv.FormatInt(comments[0].ID, 10), inv["provider_ref"])
	require.Equal(t, "On it.\n\n<!-- outboxd:"+inv["id"].(string)+" -->", result["body"])

	// A permanent error fails at once.
	r = invokeAs(b, b.Sandbox(), "github", "get_issue", map[string]any{"owner": "octo", "repo": "web", "issue_number": 99})
	e := requireAPIError(t, r, http.StatusBadGateway, "action_failed")
	require.Contains(t, e["message"], "not_found")
	waitJobState(t, b, r.Body["invocation"].(map[string]any)["id"].(string), "cancelled")

	// Bad params are a 400 and reach nobody.
	before := len(gh.Requests())
	r = invokeAs(b, b.Sandbox(), "github", "create_issue", map[string]any{"owner": "octo", "repo": "..", "title": "x", "state": "closed"})
	e = requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
	require.ElementsMatch(t, []string{"repo", "state"}, fieldNames(t, e))
	require.Len(t, gh.Requests(), before)
	requireNoSecrets(t, b, token)
}

func TestGitHub_LostAnswerCreatesOnce(t *testing.T) {
	t.Parallel()
	const token = "ghp_lostanswer0123456789abcdefghijklmnop"
	b, gh := startGitHub(t, token, &apptest.Options{Worker: worker.Config{RetryBaseDelay: 50 * time.Millisecond}})
	b.SetModes(map[string]string{"github:create_issue": "allow"})
	// GitHub creates the issue, then its answer is lost.
	gh.LoseNextCreates(1)

	inv, result := completed(t, invokeAs(b, b.Sandbox(), "github", "create_issue",
		map[string]any{"owner": "octo", "repo": "web", "title": "Deploy stuck", "body": "Twice today."}))
	require.Len(t, gh.Issues("octo", "web"), 1, "exactly one issue")
	require.Equal(t, true, inv["conflict"])
	require.Equal(t, float64(2), inv["attempt"])
	require.Equal(t, "octo/web#1", inv["provider_ref"])
	require.Equal(t, "Deploy stuck", result["title"])

	var calls []string
	for _, r := range gh.Requests() {
		calls = append(calls, r.Method+" "+r.Path)
	}
	require.Equal(t, []string{"POST /api/v3/repos/octo/web/issues", "GET /api/v3/repos/octo/web/issues"}, calls,
		"the retry looks for the marker and does not create again")
	requireNoSecrets(t, b, token)
}

func TestGitHub_RateLimitSnoozesThenCompletes(t *testing.T) {
	t.Parallel()
	const token = "ghp_ratelimit0123456789abcdefghijklmnopq"
	// One attempt only: a snooze that spent it would fail the invocation.
	b, gh := startGitHub(t, token, &apptest.Options{Worker: worker.Config{MaxAttempts: 1}})
	issue := gh.SeedIssue("octo", "web", githubtest.Issue{Title: "Flaky test"})
	var limited atomic.Bool
	gh.Intercept(func(w http.ResponseWriter, _ *http.Request) bool {
		if !limited.CompareAndSwap(false, true) {
			return false
		}
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10))
		githubtest.WriteError(w, http.StatusForbidden, "API rate limit exceeded for user ID 1.")
		return true
	})

	start := time.Now()
	inv, result := completed(t, invokeAs(b, b.Sandbox(), "github", "get_issue",
		map[string]any{"owner": "octo", "repo": "web", "issue_number": issue}))
	require.GreaterOrEqual(t, time.Since(start), time.Second, "the reset is waited for")
	require.Equal(t, "Flaky test", result["title"])
	require.Equal(t, float64(1), inv["attempt"])
	require.Len(t, gh.Requests(), 2)
	_, attempt := jobAttempt(t, b, inv["id"].(string))
	require.Equal(t, 1, attempt)
}
