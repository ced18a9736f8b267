package api_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// TestBindAudit_BadDecisionsChangeNothing: approvals whose edit, grant or
// digest is of the wrong type or shape, a grant spec that fails after a
// valid edit, and decisions or grant revocations by another organization
// (or of ids that are no grant) are each a 4xx JSON error, and none of
// them changes the database: no edit, approval, grant or event.
func TestBindAudit_BadDecisionsChangeNothing(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-bad-decisions")
	b.Contract = nil // wrong types the API document refuses are the point
	granted := pendingInvoke(t, b, "C0123456789", "granted")
	g := approveWithGrant(t, b, granted, map[string]any{"count": 3, "minutes": 10, "fixed": []string{"channel"}})
	pending := pendingInvoke(t, b, "C0999999999", "pending")
	waitJobsSettled(t, b)

	owner2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})
	edit := `"params":{"channel":"C0123456789","text":"edited"}`
	cases := []struct {
		name, method, path, token, body string
		status                          int
	}{
		{"ModeNumber", "POST", "/approve", "", `{"mode":1}`, 400},
		{"ModeUnknown", "POST", "/approve", "", `{"mode":"twice"}`, 400},
		{"ParamsString", "POST", "/approve", "", `{"params":"{\"channel\":\"C1\",\"text\":\"x\"}"}`, 400},
		{"ParamsArray", "POST", "/approve", "", `{"params":[{"channel":"C1","text":"x"}]}`, 400},
		{"ParamsNumber", "POST", "/approve", "", `{"params":1}`, 400},
		{"ParamsTrue", "POST", "/approve", "", `{"params":true}`, 400},
		{"ParamsEmpty", "POST", "/approve", "", `{"params":{}}`, 400},
		{"ParamsWrongType", "POST", "/approve", "", `{"params":{"channel":1,"text":"x"}}`, 400},
		{"ParamsUnknownKey", "POST", "/approve", "", `{"params":{"channel":"C1","text":"x","to":"all"}}`, 400},
		{"ParamsDuplicateKey", "POST", "/approve", "", `{"params":{"channel":"C1","text":"x","text":"y"}}`, 400},
		{"DigestNumber", "POST", "/approve", "", `{"digest":123456789012}`, 400},
		{"DigestUpper", "POST", "/approve", "", `{"digest":"ABCDEF012345"}`, 400},
		{"DigestOther", "POST", "/approve", "", `{"digest":"000000000000"}`, 409},
		{"DigestOtherWithEdit", "POST", "/approve", "", `{"digest":"000000000000",` + edit + `}`, 409},
		{"GrantString", "POST", "/approve", "", `{"grant":"forever"}`, 400},
		{"GrantArray", "POST", "/approve", "", `{"grant":[]}`, 400},
		{"GrantCountString", "POST", "/approve", "", `{"grant":{"count":"3","minutes":10}}`, 400},
		{"GrantCountFraction", "POST", "/approve", "", `{"grant":{"count":1.5,"minutes":10}}`, 400},
		{"GrantCountExponent", "POST", "/approve", "", `{"grant":{"count":1e3,"minutes":10}}`, 400},
		{"GrantCountHuge", "POST", "/approve", "", `{"grant":{"count":99999999999999999999,"minutes":10}}`, 400},
		{"GrantCountNegative", "POST", "/approve", "", `{"grant":{"count":-1,"minutes":10}}`, 400},
		{"GrantCountOver", "POST", "/approve", "", `{"grant":{"count":1001,"minutes":10}}`, 400},
		{"GrantMinutesOver", "POST", "/approve", "", `{"grant":{"count":1,"minutes":10081}}`, 400},
		{"GrantFixedString", "POST", "/approve", "", `{"grant":{"count":1,"minutes":1,"fixed":"channel"}}`, 400},
		{"GrantFixedNumber", "POST", "/approve", "", `{"grant":{"count":1,"minutes":1,"fixed":[1]}}`, 400},
		{"GrantFixedNested", "POST", "/approve", "", `{"grant":{"count":1,"minutes":1,"fixed":["channel/0"]}}`, 400},
		{"GrantFixedTooMany", "POST", "/approve", "", `{"grant":{"count":1,"minutes":1,"fixed":["` + strings.Repeat(`a","`, 32) + `b"]}}`, 400},
		{"GrantAlways", "POST", "/approve", "", `{"mode":"always","grant":{"count":1,"minutes":1}}`, 400},
		// A valid edit, then a grant that cannot be made: the edit is
		// rolled back with the refusal.
		{"EditThenBadGrant", "POST", "/approve", "", `{` + edit + `,"grant":{"count":1,"minutes":1,"fixed":["thread_ts"]}}`, 400},
		{"DenyReasonNumber", "POST", "/deny", "", `{"reason":1}`, 400},
		{"OtherOrgApproves", "POST", "/approve", owner2, `{"mode":"once"}`, 404},
		{"OtherOrgEditsAndGrants", "POST", "/approve", owner2, `{` + edit + `,"grant":{"count":5,"minutes":5}}`, 404},
		{"OtherOrgDenies", "POST", "/deny", owner2, `{"reason":"mine now"}`, 404},
		{"OtherOrgRevokesGrant", "DELETE", "/v1/grants/" + g["id"].(string), owner2, ``, 404},
		{"RevokeNotAUUID", "DELETE", "/v1/grants/not-a-grant", "", ``, 404},
		{"RevokeAnInvocationID", "DELETE", "/v1/grants/" + granted, "", ``, 404},
		{"RevokeNilUUID", "DELETE", "/v1/grants/00000000-0000-0000-0000-000000000000", "", ``, 404},
		{"ListActiveOne", "GET", "/v1/grants?active=1", "", ``, 400},
	}
	before := databaseDigest(t, b)
	for _, c := range cases {
		path := c.path
		if strings.HasPrefix(path, "/approve") || strings.HasPrefix(path, "/deny") {
			path = "/v1/invocations/" + pending + path
		}
		token := c.token
		if token == "" {
			token = b.Owner()
		}
		var body any
		if c.body != "" {
			body = c.body
		}
		r := b.Do(c.method, path, token, body)
		require.Equal(t, c.status, r.Status, "%s: %s", c.name, r.Raw)
		e, ok := r.Body["error"].(map[string]any)
		require.True(t, ok, "%s: no error object in %s", c.name, r.Raw)
		require.NotEmpty(t, e["code"], c.name)
	}
	// An edit with a key given twice is refused as an invoke's params
	// are, naming where the second one is.
	dup := b.Do("POST", "/v1/invocations/"+pending+"/approve", b.Owner(), `{"params":{"channel":"C0123456789","text":"x","text":"y"}}`)
	require.Equal(t, []string{"text"}, fieldNames(t, requireAPIError(t, dup, 400, "invalid_request")))
	require.Equal(t, before, databaseDigest(t, b), "a refused decision changed the database")
	inv := b.Invocation(pending)
	require.Equal(t, "pending", inv["status"])
	require.Equal(t, false, inv["edited"])
	require.Equal(t, float64(3), listGrant(t, b, g["id"].(string))["remaining"])
	require.Nil(t, listGrant(t, b, g["id"].(string))["revoked_at"])
}
