package api

import (
	"fmt"
	"net/http"
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
