package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

const slackTS = "1503435956.000247"

func TestEnvelope_ExternalIDIsIdempotent(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)

	first := postEnvelope(t, b, envelope("ext-1", nil), http.StatusCreated)
	require.Equal(t, "ext-1", first["external_id"])
	require.Equal(t, "mcp.exec", first["type"])
	require.Equal(t, apptest.Org, first["tenant_id"])
	require.Equal(t, "automation-1", first["automation_id"])
	require.Equal(t, "pending", first["result"].(map[string]any)["status"])

	again := postEnvelope(t, b, envelope("ext-1", nil), http.StatusOK)
	require.Equal(t, first["action_id"], again["action_id"])

	t.Run("DifferentArgsConflict", func(t *testing.T) {
		changed := envelope("ext-1", map[string]any{"args": map[string]any{"channel": "C0123456789", "text": "something else"}})
		r := b.Do("POST", "/v1/envelopes", b.Service(), changed)
		requireAPIError(t, r, http.StatusUnprocessableEntity, "idempotency_mismatch")
	})
	t.Run("DifferentToolConflicts", func(t *testing.T) {
		changed := envelope("ext-1", map[string]any{"tool": map[string]any{"name": "slack.other"}})
		r := b.Do("POST", "/v1/envelopes", b.Service(), changed)
		require.Equal(t, http.StatusNotFound, r.Status, string(r.Raw))
	})
	t.Run("ToolByName", func(t *testing.T) {
		byName := envelope("ext-1", map[string]any{"tool": map[string]any{"name": "slack.send_message"}})
		r := postEnvelope(t, b, byName, http.StatusOK)
		require.Equal(t, first["action_id"], r["action_id"])
		tool := r["tool"].(map[string]any)
		require.Equal(t, "slack.send_message", tool["name"])
		require.Equal(t, "slack", tool["source"])
		require.Equal(t, "send_message", tool["action"])

		r = postEnvelope(t, b, envelope("ext-by-name", map[string]any{"tool": map[string]any{"name": "slack.send_message"}}), http.StatusCreated)
		require.Equal(t, "send_message", r["tool"].(map[string]any)["action"])
	})
	t.Run("ConcurrentDuplicates", func(t *testing.T) {
		const n = 6
		ids := make(chan any, n)
		statuses := make(chan int, n)
		for range n {
			go func() {
				r := b.Do("POST", "/v1/envelopes", b.Service(), envelope("ext-race", nil))
				statuses <- r.Status
				ids <- r.Body["action_id"]
			}()
		}
		created := 0
		var want any
		for range n {
			if <-statuses == http.StatusCreated {
				created++
			}
			id := <-ids
			if want == nil {
				want = id
			}
			require.Equal(t, want, id)
		}
		require.Equal(t, 1, created)
	})

	require.Equal(t, 1, countRows(t, b, `SELECT count(*) FROM action_invocations WHERE external_id = 'ext-1'`))
	require.Equal(t, 1, countRows(t, b, `SELECT count(*) FROM action_invocations WHERE external_id = 'ext-race'`))
	require.Equal(t, 3, invocationTotal(t, b))
}

func TestEnvelope_PolicyCanOnlyTighten(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-token")
	b.SetModes(map[string]string{"slack:send_message": "allow"})

	t.Run("ApprovalRequiredParksIt", func(t *testing.T) {
		env := postEnvelope(t, b, envelope("needs-human", map[string]any{"approval": "required"}), http.StatusCreated)
		require.Equal(t, "required", env["approval"])
		require.Equal(t, "pending", env["result"].(map[string]any)["status"])
		require.Equal(t, "pending", env["invocation_status"])
		require.Equal(t, "require_approval", env["mode"])
		require.Equal(t, "request", env["mode_source"])
		expires, err := time.Parse(time.RFC3339Nano, env["expires_at"].(string))
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(24*time.Hour), expires, time.Minute, "unattended TTL")
		require.Equal(t, "pending", jobState(t, b, env["action_id"].(string)))
	})
	t.Run("HighRiskQueuesForAHuman", func(t *testing.T) {
		// high is R3: it never auto-executes, and waits for a human rather
		// than being refused.
		env := postEnvelope(t, b, envelope("too-risky", map[string]any{"risk": "high"}), http.StatusCreated)
		require.Equal(t, "pending", env["invocation_status"])
		require.Equal(t, "required", env["approval"])
		require.Equal(t, "require_approval", env["mode"])
		require.Equal(t, "request", env["mode_source"])
		require.Equal(t, "high", env["risk"])
		require.Equal(t, "pending", env["result"].(map[string]any)["status"])
	})
	t.Run("LowRiskDoesNotLoosen", func(t *testing.T) {
		b2 := b.Do("PUT", "/v1/automations/automation-1/action-modes", b.Owner(), map[string]string{"slack:send_message": "require_approval"})
		require.Equal(t, http.StatusOK, b2.Status, string(b2.Raw))
		env := postEnvelope(t, b, envelope("low-risk", map[string]any{"risk": "low"}), http.StatusCreated)
		require.Equal(t, "pending", env["invocation_status"])
		require.Equal(t, "automation_override", env["mode_source"])
		b2 = b.Do("PUT", "/v1/automations/automation-1/action-modes", b.Owner(), map[string]string{})
		require.Equal(t, http.StatusOK, b2.Status, string(b2.Raw))
	})
	t.Run("InvalidValues", func(t *testing.T) {
		for name, env := range map[string]map[string]any{
			"approval":        envelope("bad-approval", map[string]any{"approval": "maybe"}),
			"risk":            envelope("bad-risk", map[string]any{"risk": "extreme"}),
			"external_id":     envelope("", nil),
			"tool":            envelope("no-tool", map[string]any{"tool": map[string]any{}}),
			"tool.name":       envelope("bad-name", map[string]any{"tool": map[string]any{"name": "slack"}}),
			"args":            envelope("bad-args", map[string]any{"args": map[string]any{"channel": 1}}),
			"must_run_before": envelope("bad-time", map[string]any{"constraints": map[string]any{"must_run_before": "tomorrow"}}),
		} {
			r := b.Do("POST", "/v1/envelopes", b.Service(), env)
			require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", name, r.Raw)
			require.NotEmpty(t, r.Body["error"].(map[string]any)["code"], name)
		}
		noID := envelope("no-external-id", nil)
		delete(noID, "external_id")
		requireAPIError(t, b.Do("POST", "/v1/envelopes", b.Service(), noID), http.StatusBadRequest, "invalid_request")
		requireAPIError(t, b.Do("POST", "/v1/envelopes", b.Service(), envelope("unknown-tool", map[string]any{"tool": map[string]any{"name": "slack.nuke"}})),
			http.StatusNotFound, "not_found")
		require.Zero(t, countRows(t, b, `SELECT count(*) FROM action_invocations WHERE external_id NOT IN ('needs-human', 'too-risky', 'low-risk')`))
	})

	waitJobsSettled(t, b)
	require.Empty(t, b.Slack.Requests(), "neither the parked nor the denied envelope was sent")
}

func TestEnvelope_AllowRunsThroughWorker(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-envelope")
	b.SetModes(map[string]string{"slack:send_message": "allow"})

	env := postEnvelope(t, b, envelope("run-me", map[string]any{"constraints": map[string]any{"rate_bucket": "slack.minute"}}), http.StatusCreated)
	id := env["action_id"].(string)
	require.Equal(t, "auto", env["approval"])
	require.Equal(t, "slack.minute", env["constraints"].(map[string]any)["rate_bucket"])

	done := waitEnvelope(t, b, id, "sent", 10*time.Second)
	result := done["result"].(map[string]any)
	require.Equal(t, slackTS, result["provider_id"])
	require.Equal(t, true, result["output"].(map[string]any)["ok"])
	require.Nil(t, result["error"])
	require.Equal(t, "completed", done["invocation_status"])
	require.NotNil(t, done["timestamps"].(map[string]any)["completed_at"])
	waitJobState(t, b, id, "completed")

	reqs := b.Slack.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, id, reqs[0].IdempotencyKey)
	require.Equal(t, "Bearer xoxb-envelope", reqs[0].Authorization)
	require.Equal(t, "envelope run-me", reqs[0].Body["text"])

	t.Run("RepeatDoesNotResend", func(t *testing.T) {
		again := postEnvelope(t, b, envelope("run-me", map[string]any{"constraints": map[string]any{"rate_bucket": "slack.minute"}}), http.StatusOK)
		require.Equal(t, id, again["action_id"])
		require.Equal(t, "sent", again["result"].(map[string]any)["status"])
		require.Equal(t, 1, countRows(t, b, `SELECT count(*) FROM river_job WHERE args->>'invocation_id' = $1`, id), "the repeat inserts no job")
		waitJobsSettled(t, b)
		require.Len(t, b.Slack.Requests(), 1)
	})
	t.Run("DeleteCompletedConflicts", func(t *testing.T) {
		requireAPIError(t, b.Do("DELETE", "/v1/envelopes/"+id, b.Service(), nil), http.StatusConflict, "conflict")
		require.Equal(t, "completed", b.Invocation(id)["status"])
	})
}

func TestEnvelope_MustRunBeforePassedIsSkipped(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-token")
	b.SetModes(map[string]string{"slack:send_message": "allow"})

	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	env := postEnvelope(t, b, envelope("too-late", map[string]any{"constraints": map[string]any{"must_run_before": past}}), http.StatusCreated)
	id := env["action_id"].(string)
	require.NotNil(t, env["constraints"].(map[string]any)["must_run_before"])

	done := waitEnvelope(t, b, id, "skipped", 10*time.Second)
	require.Equal(t, "skipped", done["invocation_status"])
	require.Contains(t, done["result"].(map[string]any)["error"], "must_run_before")
	waitJobState(t, b, id, "completed")
	require.Empty(t, b.Slack.Requests())
}

func TestEnvelope_DeletePendingCancelsJob(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-token")

	env := postEnvelope(t, b, envelope("undo-me", nil), http.StatusCreated)
	id := env["action_id"].(string)
	require.Equal(t, "pending", env["invocation_status"])
	require.Equal(t, "pending", jobState(t, b, id))

	r := b.Do("DELETE", "/v1/envelopes/"+id, b.Service(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "cancelled", r.Body["invocation_status"])
	require.Equal(t, id, r.Body["action_id"])
	require.Equal(t, "cancelled", jobState(t, b, id))

	requireAPIError(t, b.Do("DELETE", "/v1/envelopes/"+id, b.Service(), nil), http.StatusConflict, "conflict")
	requireAPIError(t, b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"}), http.StatusConflict, "conflict")
	require.Equal(t, "cancelled", b.Invocation(id)["status"])

	t.Run("MemberCannotDelete", func(t *testing.T) {
		other := postEnvelope(t, b, envelope("keep-me", nil), http.StatusCreated)
		otherID := other["action_id"].(string)
		requireAPIError(t, b.Do("DELETE", "/v1/envelopes/"+otherID, b.Member(), nil), http.StatusForbidden, "forbidden")
		requireAPIError(t, b.Do("DELETE", "/v1/envelopes/"+otherID, b.Sandbox(), nil), http.StatusForbidden, "forbidden")
		require.Equal(t, "pending", b.Invocation(otherID)["status"])

		r := b.Do("DELETE", "/v1/envelopes/"+otherID, b.Admin(), nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Equal(t, "cancelled", r.Body["invocation_status"])
	})
	t.Run("InvokedInvocationIsNotAnEnvelope", func(t *testing.T) {
		invID := b.Invoke("send_message", message).Body["invocation_id"].(string)
		requireAPIError(t, b.Do("GET", "/v1/envelopes/"+invID, b.Service(), nil), http.StatusNotFound, "not_found")
		requireAPIError(t, b.Do("DELETE", "/v1/envelopes/"+invID, b.Service(), nil), http.StatusNotFound, "not_found")
		require.Equal(t, "pending", b.Invocation(invID)["status"])
	})

	waitJobsSettled(t, b)
	require.Empty(t, b.Slack.Requests())
}

func TestEnvelope_AutomationOverrideBeatsOrgDefault(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-token")
	b.SetModes(map[string]string{"slack:send_message": "require_approval"})

	r := b.Do("PUT", "/v1/automations/automation-1/action-modes", b.Owner(), map[string]string{"slack:send_message": "allow"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{"slack:send_message": "allow"}, r.Body)
	r = b.Do("GET", "/v1/automations/automation-1/action-modes", b.Member(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, map[string]any{"slack:send_message": "allow"}, r.Body)
	r = b.Do("GET", "/v1/action-modes", b.Member(), nil)
	require.Equal(t, map[string]any{"slack:send_message": "require_approval"}, r.Body)

	env := postEnvelope(t, b, envelope("automated", nil), http.StatusCreated)
	require.Equal(t, "allow", env["mode"])
	require.Equal(t, "automation_override", env["mode_source"])
	waitEnvelope(t, b, env["action_id"].(string), "sent", 10*time.Second)
	require.Len(t, b.Slack.Requests(), 1)

	t.Run("OtherAutomationUsesOrgDefault", func(t *testing.T) {
		svc := b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "automation-2"})
		r := b.Do("POST", "/v1/envelopes", svc, envelope("other-automation", nil))
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		require.Equal(t, "require_approval", r.Body["mode"])
		require.Equal(t, "org_default", r.Body["mode_source"])
	})
	t.Run("SandboxUsesOrgDefault", func(t *testing.T) {
		r := b.Invoke("send_message", message)
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		require.Equal(t, "org_default", r.Body["invocation"].(map[string]any)["mode_source"])
		exp, err := time.Parse(time.RFC3339Nano, r.Body["invocation"].(map[string]any)["expires_at"].(string))
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(5*time.Minute), exp, time.Minute, "interactive TTL")
	})
	require.Len(t, b.Slack.Requests(), 1)
}

// TestEnvelope_TokenLimits checks that an envelope gets no more than its
// token carries: the sources claim limits what it may run, and an
// automation id in the body must be the token's own.
func TestEnvelope_TokenLimits(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-limits")
	// The automation "nightly" may post without approval.
	r := b.Do("PUT", "/v1/automations/nightly/action-modes", b.Owner(), map[string]string{"slack:send_message": "allow"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	linearOnly := b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "nightly", Sources: auth.OnlySources("linear")})
	noAutomation := b.Token(auth.Claims{Kind: auth.KindService})
	nightly := b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "nightly"})

	t.Run("SourcesClaim", func(t *testing.T) {
		requireAPIError(t, b.Do("POST", "/v1/envelopes", linearOnly, envelope("src-1", nil)), http.StatusForbidden, "source_not_allowed")
		byName := envelope("src-2", map[string]any{"tool": map[string]any{"name": "slack.send_message"}})
		requireAPIError(t, b.Do("POST", "/v1/envelopes", linearOnly, byName), http.StatusForbidden, "source_not_allowed")
	})
	t.Run("AutomationInBodyWithoutClaim", func(t *testing.T) {
		env := envelope("auto-1", map[string]any{"automation_id": "nightly"})
		requireAPIError(t, b.Do("POST", "/v1/envelopes", noAutomation, env), http.StatusForbidden, "automation_not_allowed")
	})
	t.Run("AutomationInBodyOtherThanClaim", func(t *testing.T) {
		env := envelope("auto-2", map[string]any{"automation_id": "nightly"})
		requireAPIError(t, b.Do("POST", "/v1/envelopes", b.Service(), env), http.StatusForbidden, "automation_not_allowed")
	})
	require.Zero(t, countRows(t, b, `SELECT count(*) FROM action_invocations`))
	require.Zero(t, countRows(t, b, `SELECT count(*) FROM river_job WHERE kind = 'execute_action'`))

	t.Run("AutomationInBodyEqualToClaim", func(t *testing.T) {
		env := postEnvelopeAs(t, b, nightly, envelope("auto-3", map[string]any{"automation_id": "nightly"}), http.StatusCreated)
		require.Equal(t, "nightly", env["automation_id"])
		require.Equal(t, "automation_override", b.Invocation(env["action_id"].(string))["mode_source"])
		b.WaitStatus(env["action_id"].(string), "completed", 10*time.Second)
	})
	t.Run("WithoutClaimTheCascadeDecides", func(t *testing.T) {
		env := postEnvelopeAs(t, b, noAutomation, envelope("auto-4", nil), http.StatusCreated)
		require.Nil(t, env["automation_id"])
		inv := b.Invocation(env["action_id"].(string))
		require.Equal(t, "pending", inv["status"])
		require.NotEqual(t, "automation_override", inv["mode_source"])
	})
	require.Len(t, b.Slack.Requests(), 1)
}

// TestEnvelope_ServiceSeesItsOwn checks a service token reads and cancels
// only its own automation's envelopes, and never the org's inbox.
func TestEnvelope_ServiceSeesItsOwn(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	mine := postEnvelope(t, b, envelope("own-1", map[string]any{"approval": "required"}), http.StatusCreated)
	id := mine["action_id"].(string)
	sandboxInv := b.Invoke("send_message", message).Body["invocation_id"].(string)

	other := b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "automation-2"})
	noAutomation := b.Token(auth.Claims{Kind: auth.KindService})
	for _, tok := range []string{other, noAutomation} {
		requireAPIError(t, b.Do("GET", "/v1/envelopes/"+id, tok, nil), http.StatusNotFound, "not_found")
		requireAPIError(t, b.Do("DELETE", "/v1/envelopes/"+id, tok, nil), http.StatusNotFound, "not_found")
	}
	for _, tok := range []string{b.Service(), other} {
		requireAPIError(t, b.Do("GET", "/v1/invocations", tok, nil), http.StatusForbidden, "forbidden")
		requireAPIError(t, b.Do("GET", "/v1/invocations/"+sandboxInv, tok, nil), http.StatusForbidden, "forbidden")
	}
	require.Equal(t, "pending", b.Invocation(id)["status"])

	// Without an automation claim a token sees what it enqueued itself.
	own := postEnvelopeAs(t, b, noAutomation, envelope("own-2", map[string]any{"approval": "required"}), http.StatusCreated)
	r := b.Do("GET", "/v1/envelopes/"+own["action_id"].(string), noAutomation, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	requireAPIError(t, b.Do("GET", "/v1/envelopes/"+own["action_id"].(string), b.Service(), nil), http.StatusNotFound, "not_found")

	r = b.Do("DELETE", "/v1/envelopes/"+id, b.Service(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "cancelled", b.Invocation(id)["status"])
}

// An external id is unique in the organization, but a repeat from another
// automation (or, without one, another token) must not answer the envelope
// it holds: GET /v1/envelopes/{id} would not show it to that caller.
func TestEnvelope_RepeatOfAnotherAutomationsExternalID(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	postEnvelope(t, b, envelope("theirs-1", map[string]any{"approval": "required"}), http.StatusCreated)
	other := b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "automation-2"})
	noAutomation := b.Token(auth.Claims{Kind: auth.KindService})
	for _, tok := range []string{other, noAutomation} {
		requireAPIError(t, b.Do("POST", "/v1/envelopes", tok, envelope("theirs-1", map[string]any{"approval": "required"})),
			http.StatusUnprocessableEntity, "idempotency_mismatch")
		r := b.Do("POST", "/v1/envelopes/batch", tok, map[string]any{"envelopes": []any{envelope("theirs-1", nil)}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		item := r.Body["envelopes"].([]any)[0].(map[string]any)
		require.Nil(t, item["action_id"], string(r.Raw))
		require.Equal(t, "idempotency_mismatch", item["error"].(map[string]any)["code"])
	}

	// Without an automation claim, only the token subject that enqueued it.
	postEnvelopeAs(t, b, noAutomation, envelope("mine-1", nil), http.StatusCreated)
	postEnvelopeAs(t, b, noAutomation, envelope("mine-1", nil), http.StatusOK)
	someoneElse := b.Token(auth.Claims{Kind: auth.KindService, RegisteredClaims: jwt.RegisteredClaims{Subject: "another-service"}})
	requireAPIError(t, b.Do("POST", "/v1/envelopes", someoneElse, envelope("mine-1", nil)), http.StatusUnprocessableEntity, "idempotency_mismatch")
	// The owner still gets its own repeat.
	postEnvelope(t, b, envelope("theirs-1", map[string]any{"approval": "required"}), http.StatusOK)
	require.Equal(t, 2, countRows(t, b, `SELECT count(*) FROM action_invocations`))
}

// postEnvelopeAs enqueues env with token and requires status.
func postEnvelopeAs(t *testing.T, b *apptest.Bundle, token string, env map[string]any, status int) map[string]any {
	t.Helper()
	r := b.Do("POST", "/v1/envelopes", token, env)
	require.Equal(t, status, r.Status, string(r.Raw))
	return r.Body
}

// TestEnvelope_Batch sends good, repeated, duplicate and invalid envelopes
// in one batch: each is answered on its own, in order, and only the good
// ones are written.
func TestEnvelope_Batch(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-batch")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	earlier := postEnvelope(t, b, envelope("batch-earlier", nil), http.StatusCreated)

	batch := []any{
		envelope("batch-1", nil),
		envelope("batch-earlier", nil), // repeats a stored envelope
		envelope("batch-2", map[string]any{"approval": "required"}),
		envelope("batch-1", nil), // repeats an item of this batch
		envelope("batch-1", map[string]any{"args": map[string]any{"channel": "C0123456789", "text": "other"}}), // reuses its id
		envelope("batch-bad", map[string]any{"args": map[string]any{"channel": 7}}),
		envelope("", nil),
		envelope("batch-unknown", map[string]any{"tool": map[string]any{"name": "nope.nothing"}}),
		envelope("batch-auto", map[string]any{"automation_id": "someone-else"}),
	}
	r := b.Do("POST", "/v1/envelopes/batch", b.Service(), map[string]any{"envelopes": batch})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	items := r.Body["envelopes"].([]any)
	require.Len(t, items, len(batch))
	item := func(i int) map[string]any { return items[i].(map[string]any) }
	errCode := func(i int) any { return item(i)["error"].(map[string]any)["code"] }

	require.Equal(t, true, item(0)["created"])
	require.Equal(t, "batch-1", item(0)["external_id"])
	require.Equal(t, false, item(1)["created"])
	require.Equal(t, earlier["action_id"], item(1)["action_id"])
	require.Equal(t, true, item(2)["created"])
	require.Equal(t, "required", item(2)["approval"])
	require.Equal(t, false, item(3)["created"])
	require.Equal(t, item(0)["action_id"], item(3)["action_id"])
	require.Equal(t, "idempotency_mismatch", errCode(4))
	require.Equal(t, "invalid_request", errCode(5))
	require.Equal(t, "invalid_request", errCode(6))
	require.Equal(t, "not_found", errCode(7))
	require.Equal(t, "automation_not_allowed", errCode(8))

	require.Equal(t, 3, countRows(t, b, `SELECT count(*) FROM action_invocations`))
	require.Equal(t, 3, countRows(t, b, `SELECT count(*) FROM river_job WHERE kind = 'execute_action'`))
	require.Equal(t, 1, countRows(t, b, `SELECT count(*) FROM river_job WHERE kind = 'expire_invocation'`))
	b.WaitStatus(item(0)["action_id"].(string), "completed", 10*time.Second)
	require.Equal(t, "pending", b.Invocation(item(2)["action_id"].(string))["status"])

	t.Run("TooManyOrTooLarge", func(t *testing.T) {
		many := make([]any, 1001)
		for i := range many {
			many[i] = envelope(fmt.Sprintf("many-%d", i), nil)
		}
		requireAPIError(t, b.Do("POST", "/v1/envelopes/batch", b.Service(), map[string]any{"envelopes": many}), http.StatusBadRequest, "invalid_request")
		requireAPIError(t, b.Do("POST", "/v1/envelopes/batch", b.Service(), map[string]any{"envelopes": []any{}}), http.StatusBadRequest, "invalid_request")
		huge := envelope("huge", map[string]any{"args": map[string]any{"channel": "C0123456789", "text": strings.Repeat("x", 17<<20)}})
		requireAPIError(t, b.Do("POST", "/v1/envelopes/batch", b.Service(), map[string]any{"envelopes": []any{huge}}), http.StatusRequestEntityTooLarge, "body_too_large")
		require.Equal(t, 3, countRows(t, b, `SELECT count(*) FROM action_invocations`))
	})
	t.Run("SourcesClaimPerItem", func(t *testing.T) {
		linearOnly := b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "automation-1", Sources: auth.OnlySources("linear")})
		r := b.Do("POST", "/v1/envelopes/batch", linearOnly, map[string]any{"envelopes": []any{envelope("batch-src", nil)}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Equal(t, "source_not_allowed", r.Body["envelopes"].([]any)[0].(map[string]any)["error"].(map[string]any)["code"])
		require.Equal(t, 3, countRows(t, b, `SELECT count(*) FROM action_invocations`))
	})
	// The overrides are read once per distinct action of a batch, and
	// each item gets its own action's.
	t.Run("ModesPerAction", func(t *testing.T) {
		b.SetModes(map[string]string{"slack:send_message": "allow", "linear:create_issue": "deny"})
		r := b.Do("PUT", "/v1/automations/automation-2/action-modes", b.Owner(), map[string]string{"slack:send_message": "require_approval"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		issue := map[string]any{
			"tool": map[string]any{"source": "linear", "action": "create_issue"},
			"args": map[string]any{"teamId": "team-eng", "title": "Deploys hang"},
		}
		mixed := []any{envelope("modes-1", nil), envelope("modes-2", issue), envelope("modes-3", nil), envelope("modes-4", issue)}
		modes := func(token string, prefix string) []any {
			t.Helper()
			for i, e := range mixed {
				e.(map[string]any)["external_id"] = fmt.Sprintf("%s-%d", prefix, i)
			}
			r := b.Do("POST", "/v1/envelopes/batch", token, map[string]any{"envelopes": mixed})
			require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
			var got []any
			for _, item := range r.Body["envelopes"].([]any) {
				got = append(got, item.(map[string]any)["mode"])
			}
			return got
		}
		require.Equal(t, []any{"allow", "deny", "allow", "deny"},
			modes(b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "automation-1"}), "org"))
		require.Equal(t, []any{"require_approval", "deny", "require_approval", "deny"},
			modes(b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "automation-2"}), "automation"))
	})
}

// An item that cannot be decoded (a field of the wrong type, text Postgres
// cannot store) is that item's error, not the batch's: its neighbours are
// written.
func TestEnvelope_BatchUndecodableItemIsItsOwnError(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	batch := `{"envelopes": [
		{"external_id": 5, "tool": {"source": "slack", "action": "send_message"}, "args": {"channel": "C0123456789", "text": "a"}},
		{"external_id": "undecodable-ok-1", "tool": {"source": "slack", "action": "send_message"}, "args": {"channel": "C0123456789", "text": "b"}},
		{"external_id": "undecodable-2", "tool": {"source": "slack", "action": "send_message"}, "args": {"channel": "C0123456789", "text": "c"},
		 "constraints": {"must_run_before": "tomorrow"}},
		{"external_id": "undecodable-3", "tool": {"source": "slack", "action": "send_message"}, "args": {"channel": "C0123456789", "text": "d\u0000"}},
		{"external_id": "undecodable-ok-2", "tool": {"source": "slack", "action": "send_message"}, "args": {"channel": "C0123456789", "text": "e"},
		 "constraints": {"retry": {"max_attempts": 3}}}
	]}`
	r := b.Do("POST", "/v1/envelopes/batch", b.Service(), batch)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	items := r.Body["envelopes"].([]any)
	require.Len(t, items, 5)
	for i, want := range []string{"invalid_json", "", "invalid_json", "invalid_request", ""} {
		item := items[i].(map[string]any)
		if want == "" {
			require.Equal(t, true, item["created"], "item %d: %v", i, item)
			continue
		}
		require.Equal(t, want, item["error"].(map[string]any)["code"], "item %d: %v", i, item)
	}
	require.Equal(t, 2, countRows(t, b, `SELECT count(*) FROM action_invocations`))

	// Only undecodable items: each answered, nothing written.
	r = b.Do("POST", "/v1/envelopes/batch", b.Service(), `{"envelopes": [{"external_id": []}]}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "invalid_json", r.Body["envelopes"].([]any)[0].(map[string]any)["error"].(map[string]any)["code"])
	// The body itself must still be a batch.
	requireAPIError(t, b.Do("POST", "/v1/envelopes/batch", b.Service(), `{"envelopes": {}}`), http.StatusBadRequest, "invalid_json")
	requireAPIError(t, b.Do("POST", "/v1/envelopes/batch", b.Service(), `{"envelopes": []} x`), http.StatusBadRequest, "invalid_json")
	require.Equal(t, 2, countRows(t, b, `SELECT count(*) FROM action_invocations`))
}

// Nobody approves their own request: the person an automation's token
// acts for (its owner) cannot approve the automation's run; someone else
// can.
func TestEnvelope_OwnerCannotApproveTheirOwnRun(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-token")
	owner := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleOwner, RegisteredClaims: jwt.RegisteredClaims{Subject: "alice"}})
	service := b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "automation-1", UserID: "alice"})

	r := b.Do("POST", "/v1/envelopes", service, envelope("alice-run", nil))
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	id := r.Body["action_id"].(string)
	require.Equal(t, "pending", r.Body["invocation_status"])

	for _, mode := range []string{"once", "always"} {
		refused := b.Do("POST", "/v1/invocations/"+id+"/approve", owner, map[string]string{"mode": mode})
		requireAPIError(t, refused, http.StatusForbidden, "self_approval")
	}
	require.Equal(t, "pending", b.Invocation(id)["status"], "a refused approval changes nothing")
	modes := b.Do("GET", "/v1/action-modes", b.Owner(), nil)
	require.NotContains(t, string(modes.Raw), `"allow"`, "nor writes an always-allow")

	approved := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, approved.Status, string(approved.Raw))
	require.Equal(t, "completed", b.WaitStatus(id, "completed", 15*time.Second)["status"])
}
