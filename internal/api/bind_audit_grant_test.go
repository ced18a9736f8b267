package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// TestBindAudit_GrantFixedValueIsExact: a grant's fixed param matches only
// a request whose value is exactly the approved one. A number that jsonb
// cannot hold is stored as its text, so the stored params of a request
// sending the number 1e999999 read as the string "1e999999": a grant
// fixing the string does not let the number through, and the number
// cannot be fixed.
func TestBindAudit_GrantFixedValueIsExact(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	srv.addTool("pay", "Pay someone.", `{"type":"object","properties":{"to":{"type":"string"},"amount":{}},"required":["to","amount"]}`, nil)
	b := apptest.Start(t, nil)
	b.Contract = nil // the document reads params as float64: 1e999999 is too large for it
	_, source := createConnector(t, b, srv, nil)
	invoke := func(amount string) *apptest.Response {
		return b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invoke", b.Sandbox(),
			`{"integration":"`+source+`","action":"pay","params":{"to":"alice","amount":`+amount+`}}`)
	}
	// The string fixed: the number is another value and waits for a human.
	r := invoke(`"1e999999"`)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	approveWithGrant(t, b, r.Body["invocation_id"].(string), map[string]any{"count": 5, "minutes": 10, "fixed": []string{"amount"}})
	r = invoke(`1e999999`)
	require.Equal(t, http.StatusAccepted, r.Status, "the number 1e999999 is not the string the grant fixed: %s", r.Raw)
	require.Nil(t, r.Body["invocation"].(map[string]any)["grant_id"])

	// The number cannot be fixed (stored as its text, it would match the
	// string): the approval with that grant is refused, nothing approved.
	id := r.Body["invocation_id"].(string)
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]any{"grant": map[string]any{"count": 5, "minutes": 10, "fixed": []string{"amount"}}})
	require.Equal(t, "grant.fixed", fieldNames(t, requireAPIError(t, r, http.StatusBadRequest, "invalid_request"))[0])
	require.Equal(t, "pending", b.Invocation(id)["status"])
	require.Len(t, b.Do("GET", "/v1/grants", b.Admin(), nil).Body["grants"], 1, "no grant was made")
}
