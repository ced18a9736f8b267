package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/errs"
)

// Every kind of domain error has its status, and a service's own message
// reaches the caller under the kind's code.
func TestToAPIError_MapsEveryKind(t *testing.T) {
	for _, k := range errs.All {
		ae := toAPIError(fmt.Errorf("doing it: %w", errs.Errorf(k, "the service's words")))
		require.NotNil(t, ae, k.Code)
		require.GreaterOrEqual(t, ae.status, 400, k.Code)
		require.Less(t, ae.status, 600, k.Code)
		require.Equal(t, k.Code, ae.code)
		require.Equal(t, "doing it: the service's words", ae.message)
	}
	require.Equal(t, http.StatusNotFound, toAPIError(errs.NotFound).status)
	ve := toAPIError(errs.Invalid("url", "url is required"))
	require.Equal(t, http.StatusBadRequest, ve.status)
	require.Equal(t, "invalid_request", ve.code)
	require.Nil(t, toAPIError(fmt.Errorf("plain")), "an error of no kind is the caller's 500")
}

// A body with a value of the wrong JSON type is refused in JSON's words,
// naming the field, never the Go types it is decoded into.
func TestDecode_WrongTypeNamesTheFieldNotGoTypes(t *testing.T) {
	type retry struct {
		MaxAttempts int `json:"max_attempts"`
	}
	type body struct {
		Tool struct {
			Name string `json:"name"`
		} `json:"tool"`
		Retry   retry    `json:"retry"`
		Windows []string `json:"windows"`
	}
	for in, want := range map[string]string{
		`[]`:                               "the request body must be an object, not array",
		`{"tool": "slack.send_message"}`:   "request body is not valid JSON: tool must be an object, not string",
		`{"retry": {"max_attempts": "3"}}`: "request body is not valid JSON: retry.max_attempts must be an integer, not string",
		`{"windows": 5}`:                   "request body is not valid JSON: windows must be an array, not number",
		`{"tool": {"name": true}}`:         "request body is not valid JSON: tool.name must be a string, not bool",
	} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(in))
		err := decode(r, &body{}, false)
		ae := toAPIError(err)
		require.NotNil(t, ae, in)
		require.Equal(t, http.StatusBadRequest, ae.status, in)
		require.Equal(t, "invalid_json", ae.code, in)
		require.Equal(t, want, ae.message, in)
	}
}
