package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

func TestInvoke_BadInputChangesNothing(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-token")
	// Allow mode: anything that slipped through validation would run.
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	invokePath := "/v1/sessions/" + apptest.Session + "/actions/invoke"
	invoke := func(body any) *apptest.Response {
		t.Helper()
		return b.Do("POST", invokePath, b.Sandbox(), body)
	}
	valid := `{"integration":"slack","action":"send_message","params":{"channel":"C1","text":"hi"}}`

	t.Run("MalformedJSON", func(t *testing.T) {
		requireAPIError(t, invoke(`{"integration":"slack","action":`), http.StatusBadRequest, "invalid_json")
		requireAPIError(t, invoke(`not json`), http.StatusBadRequest, "invalid_json")
	})
	t.Run("EmptyBody", func(t *testing.T) {
		requireAPIError(t, invoke(""), http.StatusBadRequest, "invalid_json")
	})
	t.Run("TrailingGarbage", func(t *testing.T) {
		requireAPIError(t, invoke(valid+` xyz`), http.StatusBadRequest, "invalid_json")
		requireAPIError(t, invoke(valid+valid), http.StatusBadRequest, "invalid_json")
	})
	t.Run("UnknownField", func(t *testing.T) {
		e := requireAPIError(t, invoke(`{"integration":"slack","action":"send_message","params":{"channel":"C1","text":"hi"},"priority":1}`),
			http.StatusBadRequest, "invalid_json")
		require.Contains(t, e["message"], "priority")
	})
	t.Run("ParamsOfWrongTypes", func(t *testing.T) {
		r := invoke(map[string]any{"integration": "slack", "action": "send_message", "params": map[string]any{"channel": 42}})
		e := requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
		require.ElementsMatch(t, []string{"channel", "text"}, fieldNames(t, e))

		r = invoke(map[string]any{"integration": "slack", "action": "send_message",
			"params": map[string]any{"channel": true, "text": []string{"a"}, "thread_ts": 1.5}})
		e = requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
		require.ElementsMatch(t, []string{"channel", "text", "thread_ts"}, fieldNames(t, e))
	})
	t.Run("EmptyStrings", func(t *testing.T) {
		r := invoke(map[string]any{"integration": "slack", "action": "send_message", "params": map[string]any{"channel": "", "text": ""}})
		e := requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
		require.ElementsMatch(t, []string{"channel", "text"}, fieldNames(t, e))
	})
	t.Run("MissingParams", func(t *testing.T) {
		e := requireAPIError(t, invoke(`{"integration":"slack","action":"send_message"}`), http.StatusBadRequest, "invalid_request")
		require.ElementsMatch(t, []string{"channel", "text"}, fieldNames(t, e))
	})
	t.Run("ParamsNotAnObject", func(t *testing.T) {
		for _, params := range []string{`"hello"`, `[1,2]`, `42`, `null`} {
			r := invoke(`{"integration":"slack","action":"send_message","params":` + params + `}`)
			requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
		}
	})
	t.Run("LoneSurrogate", func(t *testing.T) {
		// encoding/json would store U+FFFD and post it.
		for _, text := range []string{`a\ud800b`, `\udc00`, `\ud83d\u0041`} {
			e := requireAPIError(t, invoke(`{"integration":"slack","action":"send_message","params":{"channel":"C1","text":"`+text+`"}}`),
				http.StatusBadRequest, "invalid_request")
			require.Equal(t, []string{"params.text"}, fieldNames(t, e))
			require.Contains(t, e["message"], "surrogate")
		}
	})
	t.Run("DuplicateKey", func(t *testing.T) {
		// The validator and jsonb read the last "channel", a provider
		// given the exact params may read the first.
		e := requireAPIError(t, invoke(`{"integration":"slack","action":"send_message","params":{"channel":"C-evil","text":"hi","channel":"C1"}}`),
			http.StatusBadRequest, "invalid_request")
		require.Equal(t, []string{"channel"}, fieldNames(t, e))
		require.Contains(t, fmt.Sprint(e), "appears twice")
	})
	t.Run("OversizeBody", func(t *testing.T) {
		body := `{"integration":"slack","action":"send_message","params":{"channel":"C1","text":"` +
			strings.Repeat("a", (1<<20)+1024) + `"}}`
		requireAPIError(t, invoke(body), http.StatusRequestEntityTooLarge, "body_too_large")
	})
	t.Run("UnknownIntegration", func(t *testing.T) {
		r := invoke(map[string]any{"integration": "carrier-pigeon", "action": "send_message", "params": message})
		requireAPIError(t, r, http.StatusNotFound, "not_found")
	})
	t.Run("UnknownAction", func(t *testing.T) {
		r := invoke(map[string]any{"integration": "slack", "action": "delete_workspace", "params": message})
		requireAPIError(t, r, http.StatusNotFound, "not_found")
	})
	t.Run("MissingIntegration", func(t *testing.T) {
		r := invoke(map[string]any{"action": "send_message", "params": message})
		requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
		r = invoke(map[string]any{"integration": "slack", "params": message})
		requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
	})
	t.Run("UnknownInvocationID", func(t *testing.T) {
		for _, id := range []string{uuid.NewString(), "not-a-uuid", "1"} {
			requireAPIError(t, b.Do("GET", "/v1/invocations/"+id, b.Owner(), nil), http.StatusNotFound, "not_found")
			requireAPIError(t, b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/invocations/"+id, b.Sandbox(), nil), http.StatusNotFound, "not_found")
			requireAPIError(t, b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"}), http.StatusNotFound, "not_found")
			requireAPIError(t, b.Do("POST", "/v1/invocations/"+id+"/deny", b.Owner(), map[string]string{}), http.StatusNotFound, "not_found")
			requireAPIError(t, b.Do("GET", "/v1/envelopes/"+id, b.Service(), nil), http.StatusNotFound, "not_found")
			requireAPIError(t, b.Do("DELETE", "/v1/envelopes/"+id, b.Service(), nil), http.StatusNotFound, "not_found")
		}
	})
	t.Run("InvalidModeInActionModes", func(t *testing.T) {
		for _, body := range []any{
			map[string]string{"slack:send_message": "sometimes"},
			map[string]string{"slack:send_message": "ALLOW"},
			map[string]string{"slack:send_message": ""},
			map[string]string{"slack:send_message": "deny", "nocolon": "allow"},
			map[string]any{"slack:send_message": 1},
			`["allow"]`,
			`null`, // would otherwise wipe every override
		} {
			r := b.Do("PUT", "/v1/action-modes", b.Owner(), body)
			require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))
			r = b.Do("PUT", "/v1/automations/automation-1/action-modes", b.Owner(), body)
			require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))
		}
		r := b.Do("PUT", "/v1/action-modes", b.Owner(), map[string]string{"slack:send_message": "deny", "slack:other": "sometimes"})
		e := requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
		require.Equal(t, []string{"slack:other"}, fieldNames(t, e))

		// The valid entry in a refused request was not stored either.
		modes := b.Do("GET", "/v1/action-modes", b.Owner(), nil)
		require.Equal(t, http.StatusOK, modes.Status)
		require.Equal(t, map[string]any{"slack:send_message": "allow"}, modes.Body)
		modes = b.Do("GET", "/v1/automations/automation-1/action-modes", b.Owner(), nil)
		require.Equal(t, http.StatusOK, modes.Status)
		require.Empty(t, modes.Body)
	})
	t.Run("BadListQuery", func(t *testing.T) {
		for _, q := range []string{"limit=abc", "limit=-1", "limit=101", "limit=1.5", "offset=-5", "offset=x", "status=bogus", "status=PENDING"} {
			r := b.Do("GET", "/v1/invocations?"+q, b.Owner(), nil)
			requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
		}
		for _, q := range []string{"limit=abc", "limit=500", "offset=-1"} {
			r := b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/invocations?"+q, b.Sandbox(), nil)
			requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
		}
	})

	t.Run("UnknownRouteOrMethod", func(t *testing.T) {
		requireAPIError(t, b.Do("GET", "/v1/nope", b.Owner(), nil), http.StatusNotFound, "not_found")
		requireAPIError(t, b.Do("GET", "/v1/invocations/x/y/z", b.Owner(), nil), http.StatusNotFound, "not_found")
		r := b.Do("PATCH", "/v1/invocations", b.Owner(), nil)
		requireAPIError(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
		require.Equal(t, "GET", r.Header.Get("Allow"))
		r = b.Do("GET", invokePath, b.Sandbox(), nil)
		requireAPIError(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
		require.Equal(t, "POST", r.Header.Get("Allow"))
		r = b.Do("POST", "/v1/envelopes/"+uuid.NewString(), b.Service(), nil)
		requireAPIError(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
		require.Equal(t, "GET, DELETE", r.Header.Get("Allow"))
		require.Equal(t, http.StatusOK, b.Do("HEAD", "/healthz", "", nil).Status)
	})

	require.Zero(t, invocationTotal(t, b), "refused requests create no invocation")
	require.Zero(t, countRows(t, b, `SELECT count(*) FROM action_invocations`))
	require.Zero(t, countRows(t, b, `SELECT count(*) FROM river_job WHERE kind = 'execute_action'`))
	require.Empty(t, b.Slack.Requests())
}

func TestApprove_InvalidModeChangesNothing(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	id := b.Invoke("send_message", message).Body["invocation_id"].(string)

	for _, body := range []any{
		map[string]string{"mode": "sometimes"},
		map[string]string{"mode": ""},
		map[string]any{"mode": 1},
		map[string]string{"mode": "once", "extra": "x"},
		`{"mode":"once"} trailing`,
	} {
		r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), body)
		require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))
		require.NotEmpty(t, r.Body["error"].(map[string]any)["code"])
		r = b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invocations/"+id+"/approve", b.Owner(), body)
		require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))
	}
	requireAPIError(t, b.Do("POST", "/v1/invocations/"+id+"/deny", b.Owner(), map[string]any{"reason": 5}),
		http.StatusBadRequest, "invalid_json")

	inv := b.Invocation(id)
	require.Equal(t, "pending", inv["status"])
	require.Nil(t, inv["approved_by"])
	require.Equal(t, "pending", jobState(t, b, id))
	require.Empty(t, b.Do("GET", "/v1/action-modes", b.Owner(), nil).Body, "no override written")
	waitJobsSettled(t, b)
	require.Empty(t, b.Slack.Requests())
}
