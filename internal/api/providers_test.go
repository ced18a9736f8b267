package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	linearsrc "github.com/outboxd/outboxd/executors/linear"
	"github.com/outboxd/outboxd/executors/linear/lineartest"
	"github.com/outboxd/outboxd/executors/sentry/sentrytest"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/policy"
	"github.com/outboxd/outboxd/worker"
)

const sessionActions = "/v1/sessions/" + apptest.Session + "/actions/"

// invokeAs invokes integration.action in the default session with token.
func invokeAs(b *apptest.Bundle, token, integration, action string, params any) *apptest.Response {
	b.T.Helper()
	return b.Do("POST", sessionActions+"invoke", token, map[string]any{
		"integration": integration, "action": action, "params": params,
	})
}

// completed requires r to be a synchronous success and returns its
// invocation and result.
func completed(t *testing.T, r *apptest.Response) (inv, result map[string]any) {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	inv = r.Body["invocation"].(map[string]any)
	require.Equal(t, string(invocation.StatusCompleted), inv["status"], string(r.Raw))
	result, _ = r.Body["result"].(map[string]any)
	return inv, result
}

// sandboxFor is a sandbox token of the default session acting for user.
func sandboxFor(b *apptest.Bundle, user string) string {
	return b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: apptest.Session, UserID: user})
}

// requireNoSecrets checks no secret appears in any invocation row or River
// job row (args, errors, metadata).
func requireNoSecrets(t *testing.T, b *apptest.Bundle, secrets ...string) {
	t.Helper()
	for _, query := range []string{
		`SELECT row_to_json(i)::text FROM action_invocations i`,
		`SELECT row_to_json(j)::text FROM river_job j`,
	} {
		rows, err := b.Pool.Query(context.Background(), query)
		require.NoError(t, err)
		n := 0
		for rows.Next() {
			var row string
			require.NoError(t, rows.Scan(&row))
			n++
			for _, s := range secrets {
				require.NotContains(t, row, s, "a stored row holds a provider token")
			}
		}
		require.NoError(t, rows.Err())
		rows.Close()
		require.NotZero(t, n, "nothing to check in %q", query)
	}
}

// jobAttempt is the state and attempt of an invocation's River job.
func jobAttempt(t *testing.T, b *apptest.Bundle, invocationID string) (state string, attempt int) {
	t.Helper()
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		`SELECT j.state::text, j.attempt FROM river_job j JOIN action_invocations i ON i.job_id = j.id WHERE i.id = $1`,
		invocationID).Scan(&state, &attempt))
	return state, attempt
}

func TestLinear_ThroughPipeline(t *testing.T) {
	t.Parallel()
	linear := lineartest.New(t)
	b := apptest.Start(t, &apptest.Options{BaseURLs: map[string]string{"linear": linear.URL()}})
	const key = "lin_api_pipeline_0123456789abcdef"
	b.StoreToken("linear", key, "api_key")
	linear.AcceptOnly(key)
	first := linear.SeedIssue("team-eng", "", "Checkout fails on Safari")
	second := linear.SeedIssue("team-eng", "", "Slow search")
	third := linear.SeedIssue("team-eng", "", "Typo on pricing page")

	t.Run("ReadsRunAtOnce", func(t *testing.T) {
		inv, result := completed(t, invokeAs(b, b.Sandbox(), "linear", "list_issues", map[string]any{"first": 2}))
		require.Equal(t, "allow", inv["mode"])
		require.Equal(t, "inferred_default", inv["mode_source"])
		require.Equal(t, "read", inv["risk_level"])
		ids := func(result map[string]any) []any {
			var out []any
			for _, is := range result["issues"].([]any) {
				out = append(out, is.(map[string]any)["id"])
			}
			return out
		}
		require.Equal(t, []any{first, second}, ids(result))
		page := result["page_info"].(map[string]any)
		require.Equal(t, true, page["has_next_page"])
		cursor, ok := page["end_cursor"].(string)
		require.True(t, ok, "no end_cursor in %v", page)

		_, result = completed(t, invokeAs(b, b.Sandbox(), "linear", "list_issues", map[string]any{"first": 2, "after": cursor}))
		require.Equal(t, []any{third}, ids(result))
		require.Equal(t, false, result["page_info"].(map[string]any)["has_next_page"])
		calls := linear.Calls()
		require.Equal(t, "ListIssues", calls[len(calls)-1].OperationName)
		require.Equal(t, cursor, calls[len(calls)-1].Vars()["after"])
		require.Equal(t, float64(2), calls[len(calls)-1].Vars()["first"])

		inv, result = completed(t, invokeAs(b, b.Sandbox(), "linear", "get_issue", map[string]any{"issueId": second}))
		require.Equal(t, "allow", inv["mode"])
		require.Equal(t, second, result["id"])
		require.Equal(t, "Slow search", result["title"])
		_, result = completed(t, invokeAs(b, b.Sandbox(), "linear", "get_issue", map[string]any{"issueId": "ENG-3"}))
		require.Equal(t, third, result["id"])
	})

	t.Run("CreateIssueWaitsForApproval", func(t *testing.T) {
		before := len(linear.Calls())
		r := invokeAs(b, b.Sandbox(), "linear", "create_issue", map[string]any{
			"teamId": "team-eng", "title": "Deploys hang at migrate", "description": "Seen twice today.", "priority": 2,
		})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		require.Equal(t, string(invocation.StatusPending), r.Body["status"])
		require.Equal(t, "require_approval", r.Body["invocation"].(map[string]any)["mode"])
		id := r.Body["invocation_id"].(string)
		// Its preview may read Linear (a team's name); nothing is written.
		for _, c := range linear.Calls()[before:] {
			require.NotEqual(t, "CreateIssue", c.OperationName, "nothing is created in Linear before approval")
		}

		r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		inv := b.WaitStatus(id, invocation.StatusCompleted, 10*time.Second)

		issueID := linearsrc.StableID(linearsrc.ActionCreateIssue, id)
		require.Equal(t, issueID, inv["provider_ref"])
		require.Equal(t, false, inv["conflict"])
		result := inv["result"].(map[string]any)
		require.Equal(t, issueID, result["id"])
		require.Equal(t, "Deploys hang at migrate", result["title"])
		require.Equal(t, 4, linear.IssueCount())
		// The preview's name look-ups came before the create.
		var create lineartest.Call
		for _, c := range linear.Calls()[before:] {
			if c.OperationName == "CreateIssue" {
				create = c
			}
		}
		require.Equal(t, "CreateIssue", create.OperationName)
		require.Equal(t, key, create.Authorization(), "an api_key is sent as it is")
		input := create.Vars()["input"].(map[string]any)
		require.Equal(t, issueID, input["id"])
		require.Equal(t, "team-eng", input["teamId"])
	})

	t.Run("AddCommentAllowedByOverride", func(t *testing.T) {
		b.SetModes(map[string]string{"linear:add_comment": "allow"})
		inv, result := completed(t, invokeAs(b, b.Sandbox(), "linear", "add_comment", map[string]any{"issueId": first, "body": "Seen again on *Safari 17*."}))
		require.Equal(t, "allow", inv["mode"])
		require.Equal(t, "org_default", inv["mode_source"])
		commentID := linearsrc.StableID(linearsrc.ActionAddComment, inv["id"].(string))
		require.Equal(t, commentID, inv["provider_ref"])
		require.Equal(t, commentID, result["id"])
		comment, ok := linear.Comment(commentID)
		require.True(t, ok)
		require.Equal(t, "Seen again on *Safari 17*.", comment.Body)
	})
	requireNoSecrets(t, b, key)
}

func TestLinear_InvalidParamsRecordNothing(t *testing.T) {
	t.Parallel()
	linear := lineartest.New(t)
	b := apptest.Start(t, &apptest.Options{BaseURLs: map[string]string{"linear": linear.URL()}})
	b.StoreToken("linear", "lin_api_validation", "api_key")
	// Allow mode: anything that slipped through validation would run.
	b.SetModes(map[string]string{"linear:create_issue": "allow", "linear:add_comment": "allow"})

	for _, tc := range []struct {
		name, action string
		params       any
		fields       []string
	}{
		{"CreateIssue", "create_issue",
			map[string]any{"teamId": 5, "priority": 9, "labelIds": "bug", "assignee": "ada"},
			[]string{"assignee", "labelIds", "priority", "teamId", "title"}},
		{"ListIssues", "list_issues", map[string]any{"first": 0, "after": ""}, []string{"after", "first"}},
		{"ListIssuesPageTooLarge", "list_issues", map[string]any{"first": 51}, []string{"first"}},
		{"GetIssue", "get_issue", map[string]any{}, []string{"issueId"}},
		{"AddComment", "add_comment", map[string]any{"issueId": "", "body": 3}, []string{"body", "issueId"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := invokeAs(b, b.Sandbox(), "linear", tc.action, tc.params)
			e := requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
			require.Contains(t, e["message"], "linear."+tc.action)
			require.ElementsMatch(t, tc.fields, fieldNames(t, e))
		})
	}
	require.Zero(t, countRows(t, b, `SELECT count(*) FROM action_invocations`))
	require.Zero(t, countRows(t, b, `SELECT count(*) FROM river_job WHERE kind = 'execute_action'`))
	require.Empty(t, linear.Calls())
}

func TestBroker_RefreshOnUnauthorized(t *testing.T) {
	t.Parallel()
	const (
		stale = "lin_oauth_stale_7f3a9c01d2"
		fresh = "lin_oauth_fresh_2b8e1d45f6"
	)
	setup := func(t *testing.T, token, refreshed, status string) (*apptest.Bundle, *lineartest.Server, *fakeBroker) {
		t.Helper()
		linear := lineartest.New(t)
		broker := newFakeBroker(t, token, refreshed, status)
		b := apptest.Start(t, &apptest.Options{BaseURLs: map[string]string{"linear": linear.URL()}, BrokerURL: broker.server.URL})
		return b, linear, broker
	}
	refreshes := func(calls []brokerCall) int {
		n := 0
		for _, c := range calls {
			if c.Refresh {
				n++
			}
		}
		return n
	}

	t.Run("StaleTokenRefreshedOnce", func(t *testing.T) {
		t.Parallel()
		b, linear, broker := setup(t, stale, fresh, "")
		linear.AcceptOnly("Bearer " + fresh)
		issue := linear.SeedIssue("team-eng", "", "Broker issue")

		inv, result := completed(t, invokeAs(b, sandboxFor(b, "u7"), "linear", "get_issue", map[string]any{"issueId": issue}))
		require.Equal(t, issue, result["id"])
		require.Equal(t, float64(1), inv["attempt"], "the refresh retries within the attempt")

		calls := linear.Calls()
		require.Len(t, calls, 2)
		require.Equal(t, "Bearer "+stale, calls[0].Authorization())
		require.Equal(t, "Bearer "+fresh, calls[1].Authorization())
		bc := broker.recorded()
		require.Len(t, bc, 2)
		require.Equal(t, 1, refreshes(bc))
		require.False(t, bc[0].Refresh)
		require.True(t, bc[1].Refresh)
		for _, c := range bc {
			require.Equal(t, apptest.Org, c.OrganizationID)
			require.Equal(t, "linear", c.Integration)
			require.Equal(t, "u7", c.UserID)
			// The broker reads the organization from a token outboxd
			// signed, which outboxd's API refuses: a broker holds one for
			// every organization, and may not act as any of them.
			token := strings.TrimPrefix(c.Authorization, "Bearer ")
			var claims auth.Claims
			_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return []byte(b.Secret), nil },
				jwt.WithValidMethods([]string{"HS256"}), jwt.WithAudience(auth.BrokerAudience))
			require.NoError(t, err, "the broker gets a token outboxd signed for it")
			require.Equal(t, auth.KindService, claims.Kind)
			require.Equal(t, apptest.Org, claims.Org)
			r := b.Do("POST", "/v1/envelopes", token, map[string]any{
				"external_id": "from-the-broker",
				"tool":        map[string]string{"source": "slack", "action": "send_message"},
				"args":        map[string]string{"channel": "C1", "text": "hi"},
			})
			require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Raw))
			require.Contains(t, string(r.Raw), "token broker")
		}

		// The refreshed token is cached: the next call does not ask again.
		completed(t, invokeAs(b, sandboxFor(b, "u7"), "linear", "get_issue", map[string]any{"issueId": issue}))
		require.Len(t, broker.recorded(), 2)
		calls = linear.Calls()
		require.Len(t, calls, 3)
		require.Equal(t, "Bearer "+fresh, calls[2].Authorization())
		requireNoSecrets(t, b, stale, fresh)
	})

	t.Run("RejectedAgainFails", func(t *testing.T) {
		t.Parallel()
		b, linear, broker := setup(t, stale, fresh, "")
		linear.AcceptOnly() // no token is good enough

		r := invokeAs(b, b.Sandbox(), "linear", "get_issue", map[string]any{"issueId": "ENG-1"})
		e := requireAPIError(t, r, http.StatusBadGateway, "action_failed")
		require.Contains(t, e["message"], "unauthorized")
		inv := r.Body["invocation"].(map[string]any)
		require.Equal(t, string(invocation.StatusFailed), inv["status"])
		require.Contains(t, inv["error"], "after a refresh")
		id := inv["id"].(string)

		waitJobState(t, b, id, "cancelled") // not retried by River
		require.Len(t, linear.Calls(), 2)
		require.Equal(t, 1, refreshes(broker.recorded()))
		require.Equal(t, string(invocation.StatusFailed), b.Invocation(id)["status"])
		requireNoSecrets(t, b, stale, fresh)
	})

	t.Run("TransientBrokerFailuresRetried", func(t *testing.T) {
		t.Parallel()
		b, linear, broker := setup(t, fresh, "", "")
		broker.failNext(2)
		linear.AcceptOnly("Bearer " + fresh)
		issue := linear.SeedIssue("team-eng", "", "Broker hiccup")

		completed(t, invokeAs(b, b.Sandbox(), "linear", "get_issue", map[string]any{"issueId": issue}))
		require.Len(t, broker.recorded(), 3, "two 503s, then the token")
		require.Zero(t, refreshes(broker.recorded()))
		require.Len(t, linear.Calls(), 1)
	})

	t.Run("RevokedIntegrationFails", func(t *testing.T) {
		t.Parallel()
		b, linear, broker := setup(t, "", "", "revoked")

		r := invokeAs(b, b.Sandbox(), "linear", "get_issue", map[string]any{"issueId": "ENG-1"})
		e := requireAPIError(t, r, http.StatusBadGateway, "action_failed")
		require.Contains(t, e["message"], "integration_inactive")
		require.Contains(t, e["message"], "revoked")
		id := r.Body["invocation"].(map[string]any)["id"].(string)

		waitJobState(t, b, id, "cancelled")
		require.Empty(t, linear.Calls())
		require.Len(t, broker.recorded(), 1, "an inactive integration is not asked again")
	})
}

func TestSentry_ThroughPipeline(t *testing.T) {
	t.Parallel()
	sentry := sentrytest.New(t)
	b := apptest.Start(t, &apptest.Options{BaseURLs: map[string]string{"sentry": sentry.URL()}})
	const token = "sntrys_pipeline_0a1b2c3d4e5f"
	b.StoreToken("sentry", token, "")
	issue := sentry.SeedIssue("web", "TypeError: cart is undefined")
	sentry.SeedIssue("api", "KeyError: 'user'")

	inv, result := completed(t, invokeAs(b, b.Sandbox(), "sentry", "list_issues",
		map[string]any{"organization_slug": "acme", "project_slug": "web"}))
	require.Equal(t, "allow", inv["mode"])
	issues := result["issues"].([]any)
	require.Len(t, issues, 1)
	require.Equal(t, issue, issues[0].(map[string]any)["id"])
	require.Nil(t, result["next_cursor"])
	call := sentry.Requests()[0]
	require.Equal(t, "/api/0/projects/acme/web/issues/", call.Path)
	require.Equal(t, "Bearer "+token, call.Header.Get("Authorization"))

	// Every path segment is escaped on its own.
	_, result = completed(t, invokeAs(b, b.Sandbox(), "sentry", "get_issue",
		map[string]any{"issue_id": issue, "organization_slug": "ac me?x#y"}))
	require.Equal(t, issue, result["id"])
	require.Equal(t, "/api/0/organizations/ac%20me%3Fx%23y/issues/"+issue+"/", sentry.Requests()[1].Path)

	r := invokeAs(b, b.Sandbox(), "sentry", "update_issue", map[string]any{"issue_id": issue, "status": "resolved"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), nil).Status)
	done := b.WaitStatus(id, invocation.StatusCompleted, 10*time.Second)
	require.Equal(t, issue, done["provider_ref"])
	// The preview read the issue (GET) before the update (PUT).
	var update sentrytest.Request
	for _, c := range sentry.Requests()[2:] {
		if c.Method == "PUT" {
			update = c
		}
	}
	require.Equal(t, "PUT", update.Method)
	require.JSONEq(t, `{"status":"resolved"}`, string(update.Body))

	r = invokeAs(b, b.Sandbox(), "sentry", "get_issue", map[string]any{"issue_id": "999"})
	e := requireAPIError(t, r, http.StatusBadGateway, "action_failed")
	require.Contains(t, e["message"], "not_found")
	waitJobState(t, b, r.Body["invocation"].(map[string]any)["id"].(string), "cancelled")
	requireNoSecrets(t, b, token)
}

func TestSentry_RateLimitedSnoozesThenCompletes(t *testing.T) {
	t.Parallel()
	sentry := sentrytest.New(t)
	var limited atomic.Bool
	sentry.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if !limited.CompareAndSwap(false, true) {
			return false
		}
		// As Sentry's API answers: no Retry-After, the window's reset in
		// epoch seconds, and a JSON string for a body.
		w.Header().Set("X-Sentry-Rate-Limit-Remaining", "0")
		w.Header().Set("X-Sentry-Rate-Limit-Reset", strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10))
		sentrytest.WriteJSON(w, http.StatusTooManyRequests, "You are attempting to use this endpoint too frequently. Limit is 40 requests in 1 seconds")
		return true
	})
	// One attempt only: a snooze that burned it would fail the invocation.
	b := apptest.Start(t, &apptest.Options{BaseURLs: map[string]string{"sentry": sentry.URL()}, Worker: worker.Config{MaxAttempts: 1}})
	const token = "sntrys_ratelimit_9a8b7c6d5e"
	b.StoreToken("sentry", token, "")
	issue := sentry.SeedIssue("web", "TimeoutError")

	start := time.Now()
	inv, result := completed(t, invokeAs(b, b.Sandbox(), "sentry", "get_issue", map[string]any{"issue_id": issue}))
	require.GreaterOrEqual(t, time.Since(start), time.Second, "the reset is waited for")
	require.Less(t, time.Since(start), 10*time.Second, "and no more")
	require.Equal(t, issue, result["id"])
	require.Equal(t, float64(1), inv["attempt"])
	require.Len(t, sentry.Requests(), 2)
	waitJobState(t, b, inv["id"].(string), "completed")
	_, attempt := jobAttempt(t, b, inv["id"].(string))
	require.Equal(t, 1, attempt)
	requireNoSecrets(t, b, token)
}

// A provider's answer is stored even when Postgres could not store it as
// it came (a number beyond jsonb's numeric, a NUL, bytes that are not
// UTF-8, in a result or an error): otherwise each attempt would make the
// call again, and the invocation end attempts_exhausted.
func TestSentry_AnswersPostgresCannotStoreAsTheyCame(t *testing.T) {
	t.Parallel()
	sentry := sentrytest.New(t)
	sentry.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, "/projects/") {
			_, _ = io.WriteString(w, `[{"id":"1","count":1e999999,"culprit":"a\u0000b","ratio":0e-99999,"fine":1.5E+3}]`)
			return true
		}
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "{\"detail\":\"no \\u0000 such \xff issue\"}")
		return true
	})
	b := apptest.Start(t, &apptest.Options{BaseURLs: map[string]string{"sentry": sentry.URL()}})
	b.StoreToken("sentry", "sntrys_unstorable_5e6f7a8b9c", "")

	_, result := completed(t, invokeAs(b, b.Sandbox(), "sentry", "list_issues",
		map[string]any{"organization_slug": "acme", "project_slug": "web"}))
	issue := result["issues"].([]any)[0].(map[string]any)
	require.Equal(t, "1e999999", issue["count"], "a number jsonb cannot hold is kept as its text")
	require.Equal(t, "0e-99999", issue["ratio"])
	require.Equal(t, 1500.0, issue["fine"])
	require.Equal(t, "a\uFFFDb", issue["culprit"])
	require.Len(t, sentry.Requests(), 1, "called once")

	r := invokeAs(b, b.Sandbox(), "sentry", "get_issue", map[string]any{"issue_id": "42"})
	e := requireAPIError(t, r, http.StatusBadGateway, "action_failed")
	require.Contains(t, e["message"], "such")
	require.Len(t, sentry.Requests(), 2, "a final failure is not made again")
	waitJobState(t, b, r.Body["invocation"].(map[string]any)["id"].(string), "cancelled")
}

func TestSentry_ServerErrorsExhaustAttempts(t *testing.T) {
	t.Parallel()
	sentry := sentrytest.New(t)
	sentry.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		// An answer that echoes the credential: it must be stored redacted.
		sentrytest.WriteJSON(w, http.StatusServiceUnavailable, map[string]any{
			"detail": "upstream unavailable for " + r.Header.Get("Authorization"),
		})
		return true
	})
	b := apptest.Start(t, &apptest.Options{
		BaseURLs: map[string]string{"sentry": sentry.URL()},
		Worker:   worker.Config{MaxAttempts: 3, RetryBaseDelay: 50 * time.Millisecond},
	})
	const token = "sntrys_exhaust_4d5e6f7a8b9c"
	b.StoreToken("sentry", token, "")

	r := invokeAs(b, b.Sandbox(), "sentry", "get_issue", map[string]any{"issue_id": "4504123456"})
	require.Contains(t, []int{http.StatusAccepted, http.StatusBadGateway}, r.Status, string(r.Raw))
	id := r.Body["invocation"].(map[string]any)["id"].(string)

	inv := b.WaitStatus(id, invocation.StatusFailed, 20*time.Second)
	require.Contains(t, inv["error"], "503")
	require.Contains(t, inv["error"], "[REDACTED]")
	require.Equal(t, float64(3), inv["attempt"])
	require.Eventually(t, func() bool {
		state, attempt := jobAttempt(t, b, id)
		return state == "discarded" && attempt == 3
	}, 10*time.Second, 50*time.Millisecond, "the dead letter is River's discarded job")
	require.Len(t, sentry.Requests(), 3)
	requireNoSecrets(t, b, token)
}

func TestLinear_CreateIssueRetriedAfterTimeoutConflicts(t *testing.T) {
	t.Parallel()
	linear := lineartest.New(t)
	// The first create takes effect, then its answer never comes.
	linear.HangAfterNextMutation()
	b := apptest.Start(t, &apptest.Options{BaseURLs: map[string]string{"linear": linear.URL()}, Worker: worker.Config{CallTimeout: 300 * time.Millisecond}})
	const key = "lin_api_timeout_5c6d7e8f90"
	b.StoreToken("linear", key, "")
	b.SetModes(map[string]string{"linear:create_issue": "allow"})

	inv, result := completed(t, invokeAs(b, b.Sandbox(), "linear", "create_issue",
		map[string]any{"teamId": "team-eng", "title": "Deploy stuck after timeout"}))
	issueID := linearsrc.StableID(linearsrc.ActionCreateIssue, inv["id"].(string))
	require.Equal(t, 1, linear.IssueCount(), "exactly one issue")
	require.Equal(t, true, inv["conflict"])
	require.Equal(t, float64(2), inv["attempt"])
	require.Equal(t, issueID, inv["provider_ref"])
	require.Equal(t, issueID, result["id"])
	require.Equal(t, "ENG-1", result["identifier"])
	require.Equal(t, "Deploy stuck after timeout", result["title"])

	calls := linear.Calls()
	var ops []string
	for _, c := range calls {
		ops = append(ops, c.OperationName)
	}
	require.Equal(t, []string{"CreateIssue", "CreateIssue", "GetIssue"}, ops)
	require.Equal(t, issueID, calls[0].Vars()["input"].(map[string]any)["id"])
	require.Equal(t, issueID, calls[1].Vars()["input"].(map[string]any)["id"], "the retry sends the same id")
	require.Equal(t, key, calls[0].Authorization(), "a lin_api_ key without a kind is sent as it is")
	requireNoSecrets(t, b, key)
}

func TestCatalog_AvailableAndGuides(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-catalog-token")
	b.StoreToken("linear", "lin_api_catalog_token", "api_key")
	limited := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: apptest.Session, Sources: auth.OnlySources("linear")})
	linearActions := []string{"linear.add_comment", "linear.create_issue", "linear.get_issue", "linear.list_issues", "linear.update_issue"}

	available := func(t *testing.T, token string) map[string]map[string]any {
		t.Helper()
		r := b.Do("GET", sessionActions+"available", token, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		out := map[string]map[string]any{}
		for _, a := range r.Body["actions"].([]any) {
			action := a.(map[string]any)
			out[action["source"].(string)+"."+action["action"].(string)] = action
		}
		return out
	}
	keys := func(m map[string]map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		return out
	}
	guide := func(t *testing.T, token, integration string) string {
		t.Helper()
		r := b.Do("GET", sessionActions+"guide/"+integration, token, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Contains(t, r.Header.Get("Content-Type"), "text/markdown")
		return string(r.Raw)
	}

	t.Run("AvailableFollowsCredentials", func(t *testing.T) {
		all := available(t, b.Sandbox())
		require.ElementsMatch(t, append([]string{"slack.send_message"}, linearActions...), keys(all), "sentry has no credential")
		hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
		hashes := map[string]bool{}
		for name, a := range all {
			hash, _ := a["definition_hash"].(string)
			require.Regexp(t, hex64, hash, name)
			params, err := json.Marshal(a["params"])
			require.NoError(t, err)
			want, err := policy.DefinitionHash(params)
			require.NoError(t, err)
			require.Equal(t, want, hash, "%s: the hash is policy.DefinitionHash of the params", name)
			hashes[hash] = true
			require.NotEmpty(t, a["description"], name)
		}
		require.Len(t, hashes, len(all), "different contracts hash differently")

		create := all["linear.create_issue"]
		require.Equal(t, "write", create["risk_level"])
		require.Equal(t, "require_approval", create["mode"])
		require.Equal(t, "inferred_default", create["mode_source"])
		require.ElementsMatch(t, []any{"teamId", "title"}, create["params"].(map[string]any)["required"])
		require.Equal(t, "allow", all["linear.list_issues"]["mode"])
		require.Equal(t, "read", all["linear.list_issues"]["risk_level"])
		require.Equal(t, "exactly_once", create["delivery"], "a client id from the invocation id")
		require.Equal(t, "reconciled", all["slack.send_message"]["delivery"], "looked up before posting again")
	})

	t.Run("SourcesCarryTheProvidersDisplayNames", func(t *testing.T) {
		r := b.Do("GET", sessionActions+"available", b.Sandbox(), nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.ElementsMatch(t, []any{
			map[string]any{"source": "linear", "name": "Linear", "status": "ok"},
			map[string]any{"source": "slack", "name": "Slack", "status": "ok"},
		}, r.Body["sources"])
	})

	t.Run("SourcesClaimLimitsEverything", func(t *testing.T) {
		require.ElementsMatch(t, linearActions, keys(available(t, limited)))
		requireAPIError(t, b.Do("GET", sessionActions+"guide/slack", limited, nil), http.StatusNotFound, "not_found")
		requireAPIError(t, invokeAs(b, limited, "slack", "send_message", message), http.StatusForbidden, "source_not_allowed")
		// Without a credential, an integration has no guide either.
		requireAPIError(t, b.Do("GET", sessionActions+"guide/sentry", b.Sandbox(), nil), http.StatusNotFound, "not_found")
		requireAPIError(t, b.Do("GET", sessionActions+"guide/carrier-pigeon", b.Sandbox(), nil), http.StatusNotFound, "not_found")
	})

	section := func(t *testing.T, md, action string) string {
		t.Helper()
		head := "## " + action + "\n"
		i := strings.Index(md, head)
		require.GreaterOrEqual(t, i, 0, "no section %q in:\n%s", action, md)
		rest := md[i+len(head):]
		if j := strings.Index(rest, "\n## "); j >= 0 {
			rest = rest[:j]
		}
		return rest
	}

	t.Run("GuideRendersDefinitionsAndModes", func(t *testing.T) {
		md := guide(t, limited, "linear")
		require.NotEmpty(t, linearsrc.Provider.Guide)
		require.Contains(t, md, "\n"+linearsrc.Provider.Guide+"\n", "the provider's guide text comes first")
		require.Less(t, strings.Index(md, linearsrc.Provider.Guide), strings.Index(md, "\n## "))
		for _, a := range linearActions {
			section(t, md, a)
		}
		create := section(t, md, "linear.create_issue")
		require.Contains(t, create, "Mode: `require_approval`")
		require.Contains(t, create, "Risk: `R2` (write)")
		require.Contains(t, create, "Delivery: `exactly_once`")
		require.Contains(t, section(t, md, "linear.get_issue"), "Risk: `R1` (read)")
		require.Regexp(t, "(?m)^\\| `teamId` \\| string \\| yes \\| .+\\|$", create)
		require.Regexp(t, "(?m)^\\| `priority` \\| integer \\| no \\| .+\\|$", create)
		require.Contains(t, create, "### Example")
		start := strings.Index(create, "```json\n")
		require.GreaterOrEqual(t, start, 0, create)
		example := create[start+len("```json\n"):]
		example = example[:strings.Index(example, "\n```")]
		var body struct {
			Integration string         `json:"integration"`
			Action      string         `json:"action"`
			Params      map[string]any `json:"params"`
		}
		require.NoError(t, json.Unmarshal([]byte(example), &body), example)
		require.Equal(t, "linear", body.Integration)
		require.Equal(t, "create_issue", body.Action)
		require.Contains(t, body.Params, "teamId")
		require.Contains(t, body.Params, "title")
		require.Contains(t, section(t, md, "linear.list_issues"), "Mode: `allow`")

		b.SetModes(map[string]string{"linear:create_issue": "allow"})
		create = section(t, guide(t, limited, "linear"), "linear.create_issue")
		require.Contains(t, create, "Mode: `allow` (org_default)")
		require.NotContains(t, create, "require_approval")
	})

	t.Run("GuideIsNotHTMLEscaped", func(t *testing.T) {
		md := guide(t, b.Sandbox(), "slack")
		require.Contains(t, section(t, md, "slack.send_message"), `"channel": "<channel>"`)
		require.NotContains(t, md, `\u003c`)
	})

	t.Run("BootstrapGuide", func(t *testing.T) {
		r := b.Do("GET", "/v1/actions/bootstrap-guide", limited, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Contains(t, r.Header.Get("Content-Type"), "text/markdown")
		md := string(r.Raw)
		for _, want := range []string{"/actions/available", "/actions/guide/{integration}", "/actions/invoke"} {
			require.Contains(t, md, want)
		}
		requireAPIError(t, b.Do("GET", "/v1/actions/bootstrap-guide", "", nil), http.StatusUnauthorized, "unauthorized")
	})
	require.Zero(t, invocationTotal(t, b), "the refused invoke recorded nothing")
}

func TestCredentials_UserScopedAndTokenKinds(t *testing.T) {
	t.Parallel()
	linear := lineartest.New(t)
	sentry := sentrytest.New(t)
	b := apptest.Start(t, &apptest.Options{BaseURLs: map[string]string{"linear": linear.URL(), "sentry": sentry.URL()}})
	const (
		orgKey     = "org-linear-api-key-31337"
		orgOAuth   = "org-linear-oauth-token-777"
		userToken  = "u1-linear-oauth-token-4242"
		userSentry = "u1-sentry-token-5150"
	)
	b.StoreToken("linear", orgKey, "api_key")
	for integration, body := range map[string]map[string]string{
		"linear": {"token": userToken, "token_kind": "oauth", "user_id": "u1"},
		"sentry": {"token": userSentry, "user_id": "u1"},
	} {
		r := b.Do("PUT", "/v1/credentials/"+integration, b.Owner(), body)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		cred := r.Body["credential"].(map[string]any)
		require.Equal(t, "u1", cred["user_id"])
		require.NotContains(t, string(r.Raw), body["token"])
	}
	issue := linear.SeedIssue("team-eng", "", "Scoped issue")
	sentryIssue := sentry.SeedIssue("web", "Scoped error")

	authorization := func(t *testing.T, token string) string {
		t.Helper()
		completed(t, invokeAs(b, token, "linear", "get_issue", map[string]any{"issueId": issue}))
		calls := linear.Calls()
		return calls[len(calls)-1].Authorization()
	}

	t.Run("UserCredentialPreferred", func(t *testing.T) {
		r := invokeAs(b, sandboxFor(b, "u1"), "linear", "get_issue", map[string]any{"issueId": issue})
		inv, _ := completed(t, r)
		require.Equal(t, "u1", inv["user_id"])
		calls := linear.Calls()
		require.Equal(t, "Bearer "+userToken, calls[len(calls)-1].Authorization(), "an oauth token is sent as Bearer")
	})
	t.Run("OthersGetTheOrgCredential", func(t *testing.T) {
		require.Equal(t, orgKey, authorization(t, b.Sandbox()), "an api_key is sent as it is")
		require.Equal(t, orgKey, authorization(t, sandboxFor(b, "u2")))
	})
	t.Run("OrgOAuthToken", func(t *testing.T) {
		b.StoreToken("linear", orgOAuth, "oauth")
		require.Equal(t, "Bearer "+orgOAuth, authorization(t, b.Sandbox()))
		require.Equal(t, "Bearer "+userToken, authorization(t, sandboxFor(b, "u1")))
	})
	t.Run("UserOnlyIntegration", func(t *testing.T) {
		has := func(token string) bool {
			r := b.Do("GET", sessionActions+"available", token, nil)
			require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
			return strings.Contains(string(r.Raw), `"source":"sentry"`)
		}
		require.True(t, has(sandboxFor(b, "u1")), "u1's own credential makes sentry available to u1")
		require.False(t, has(b.Sandbox()))

		completed(t, invokeAs(b, sandboxFor(b, "u1"), "sentry", "get_issue", map[string]any{"issue_id": sentryIssue}))
		require.Equal(t, "Bearer "+userSentry, sentry.Requests()[0].Header.Get("Authorization"))

		r := invokeAs(b, b.Sandbox(), "sentry", "get_issue", map[string]any{"issue_id": sentryIssue})
		e := requireAPIError(t, r, http.StatusBadGateway, "action_failed")
		require.Contains(t, e["message"], "credential_missing")
		require.Len(t, sentry.Requests(), 1)
	})
	requireNoSecrets(t, b, orgKey, orgOAuth, userToken, userSentry)
}
