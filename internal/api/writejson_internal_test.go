package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// leaky is a value whose MarshalJSON fails with words that must not be
// logged.
type leaky struct{}

func (leaky) MarshalJSON() ([]byte, error) { return nil, errors.New("secret-value xoxb-123") }

// TestWriteJSON_UnencodableIsA500 is not parallel: the logger writeJSON
// logs with is the last Server's. An answer encoding/json refuses was
// sent with its status (200, 201) and an empty body; it is a 500 with the
// API's error body, logged by its type, never its value.
func TestWriteJSON_UnencodableIsA500(t *testing.T) { //nolint:paralleltest
	var logs bytes.Buffer
	New(&Deps{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, v := range []any{
		map[string]any{"ratio": math.NaN()},
		map[string]any{"invocation": map[string]any{"c": make(chan int)}},
		[]any{leaky{}},
	} {
		logs.Reset()
		w := httptest.NewRecorder()
		writeJSON(w, http.StatusCreated, v)
		require.Equal(t, http.StatusInternalServerError, w.Code, "%T", v)
		require.Equal(t, "application/json", w.Header().Get("Content-Type"))
		var body map[string]map[string]any
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), w.Body.String())
		require.Equal(t, map[string]map[string]any{"error": {"code": "internal", "message": "internal error"}}, body)
		require.Contains(t, logs.String(), `level=ERROR msg="an answer could not be encoded as JSON: answered 500 instead" status=201 type=`)
		for _, value := range []string{"NaN", "secret-value", "xoxb"} {
			require.NotContains(t, logs.String(), value)
		}
	}
	require.Contains(t, logs.String(), `error="MarshalJSON or MarshalText of type api.leaky failed"`)

	// What encodes is answered as before.
	w := httptest.NewRecorder()
	writeJSON(w, http.StatusCreated, map[string]any{"ok": true})
	require.Equal(t, http.StatusCreated, w.Code)
	require.JSONEq(t, `{"ok": true}`, w.Body.String())
}
