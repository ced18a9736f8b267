package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/api"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval"
)

// openAPIOperation is what the drift test reads of an operation.
type openAPIOperation struct {
	Security   *[]map[string][]string     `json:"security"`
	Callers    []string                   `json:"x-outboxd-callers"`
	Parameters []openAPIParameter         `json:"parameters"`
	Responses  map[string]openAPIResponse `json:"responses"`
}

type openAPIParameter struct {
	Ref  string `json:"$ref"`
	Name string `json:"name"`
	In   string `json:"in"`
}

type openAPIResponse struct {
	Ref     string                     `json:"$ref"`
	Content map[string]json.RawMessage `json:"content"`
}

type openAPIDocument struct {
	OpenAPI  string                                `json:"openapi"`
	Security []map[string][]string                 `json:"security"`
	Paths    map[string]map[string]json.RawMessage `json:"paths"`
	Comps    struct {
		Parameters map[string]openAPIParameter `json:"parameters"`
		Responses  map[string]openAPIResponse  `json:"responses"`
	} `json:"components"`
}

var httpMethods = []string{"get", "put", "post", "patch", "delete", "head", "options", "trace"}

// TestOpenAPI_Drift holds the document to the routes the server registers:
// every route (authenticated or not) is documented, every documented
// operation is served, each authenticated operation names the callers of
// the route table in x-outboxd-callers, takes the bearer token and
// documents the error answers every authenticated route can give, public
// operations take no token, every path wildcard is a declared parameter,
// and the event streams answer text/event-stream.
func TestOpenAPI_Drift(t *testing.T) {
	t.Parallel()
	var doc openAPIDocument
	require.NoError(t, json.Unmarshal(api.OpenAPI(), &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.Equal(t, []map[string][]string{{"bearer": {}}, {"consoleSession": {}}}, doc.Security, "authenticated by default: a bearer token or the console's session")

	documented := map[string]openAPIOperation{}
	pathParams := map[string][]openAPIParameter{}
	for path, item := range doc.Paths {
		for key, raw := range item {
			if key == "parameters" {
				var params []openAPIParameter
				require.NoError(t, json.Unmarshal(raw, &params))
				pathParams[path] = params
				continue
			}
			require.Contains(t, httpMethods, key, "%s has %q", path, key)
			var op openAPIOperation
			require.NoError(t, json.Unmarshal(raw, &op), "%s %s", key, path)
			documented[strings.ToUpper(key)+" "+path] = op
		}
	}

	server := api.New(&api.Deps{SlackClicks: new(slackapproval.Service).Clicks(nil), MCP: noMCP{}})
	served := map[string]bool{}
	for _, rt := range server.Routes() {
		key := rt.Method + " " + rt.Pattern
		served[key] = true
		op, ok := documented[key]
		if !ok {
			t.Errorf("%s is served but not documented in openapi.yaml", key)
			continue
		}
		require.Equal(t, rt.Who, op.Callers, "%s: x-outboxd-callers differs from the route table", key)
		require.Nil(t, op.Security, "%s takes the document's security", key)
		for _, status := range []string{"400", "401", "403", "500", "503"} {
			require.Contains(t, op.Responses, status, "%s: every authenticated route can answer %s", key, status)
		}
		if rt.Stream {
			require.Contains(t, op.Responses["200"].Content, "text/event-stream", "%s is an event stream", key)
		}
		requireWildcardsDeclared(t, &doc, key, rt.Pattern, pathParams[rt.Pattern], op.Parameters)
	}
	public := server.PublicRoutes()
	require.NotEmpty(t, public)
	for _, rt := range public {
		key := rt.Method + " " + rt.Pattern
		served[key] = true
		op, ok := documented[key]
		if !ok {
			t.Errorf("%s is served but not documented in openapi.yaml", key)
			continue
		}
		require.NotNil(t, op.Security, "%s takes no token: security: []", key)
		require.Empty(t, *op.Security, "%s takes no token: security: []", key)
		require.Empty(t, op.Callers, "%s takes no token", key)
	}
	var extra []string
	for key := range documented {
		if !served[key] {
			extra = append(extra, key)
		}
	}
	sort.Strings(extra)
	require.Empty(t, extra, "documented but not served")
}

// requireWildcardsDeclared checks that each {wildcard} of pattern is a path
// parameter of the path item or the operation.
func requireWildcardsDeclared(t *testing.T, doc *openAPIDocument, key, pattern string, lists ...[]openAPIParameter) {
	t.Helper()
	var declared []string
	for _, list := range lists {
		for _, p := range list {
			if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
				p = doc.Comps.Parameters[name]
			}
			if p.In == "path" {
				declared = append(declared, p.Name)
			}
		}
	}
	for rest := pattern; strings.Contains(rest, "{"); {
		name := rest[strings.Index(rest, "{")+1 : strings.Index(rest, "}")]
		rest = rest[strings.Index(rest, "}")+1:]
		require.True(t, slices.Contains(declared, name), "%s: path parameter %s is not declared", key, name)
	}
}

// TestOpenAPI_Served checks GET /openapi.json serves the document, without
// a token, as JSON.
func TestOpenAPI_Served(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	r := b.Do("GET", "/openapi.json", "", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.JSONEq(t, string(api.OpenAPI()), string(r.Raw))
	require.Equal(t, "3.1.0", r.Body["openapi"])
	require.NotContains(t, r.Body, "x-defs", "the YAML's shared sets are expanded, not served")
}

// TestOpenAPI_ContractCatchesMismatches shows the check every end-to-end
// exchange goes through refuses what the document does not allow: a wrong
// or extra field, an undocumented status, an error in another shape, a
// request the document refuses that the server took, a route the document
// does not have, and event-stream data of the wrong shape.
func TestOpenAPI_ContractCatchesMismatches(t *testing.T) {
	t.Parallel()
	contract, err := apptest.DefaultContract()
	require.NoError(t, err)
	check := func(method, path, reqBody string, status int, contentType, respBody string) error {
		var body io.Reader
		if reqBody != "" {
			body = strings.NewReader(reqBody)
		}
		req := httptest.NewRequest(method, "http://outboxd.test"+path, body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer x.y.z")
		resp := &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(nil))}
		if contentType != "" {
			resp.Header.Set("Content-Type", contentType)
		}
		return contract.Check(req, []byte(reqBody), resp, []byte(respBody))
	}
	const js = "application/json"
	apiErr := `{"error":{"code":"invalid_request","message":"token is required"}}`

	// What matches passes.
	require.NoError(t, check("GET", "/healthz", "", 200, js, `{"status":"ok"}`))
	require.NoError(t, check("PUT", "/v1/credentials/slack", `{"token":5}`, 400, js, apiErr))
	require.NoError(t, check("GET", "/v1/nope", "", 404, js, `{"error":{"code":"not_found","message":"no route"}}`))
	require.NoError(t, check("PUT", "/v1/queues", "", 405, js, `{"error":{"code":"method_not_allowed","message":"no"}}`))

	for name, err := range map[string]error{
		"WrongValue":          check("GET", "/healthz", "", 200, js, `{"status":"fine"}`),
		"ExtraField":          check("GET", "/healthz", "", 200, js, `{"status":"ok","uptime":5}`),
		"MissingField":        check("GET", "/v1/credentials", "", 200, js, `{}`),
		"WrongType":           check("GET", "/v1/invocations", "", 200, js, `{"invocations":[],"total":"none"}`),
		"UndocumentedStatus":  check("GET", "/healthz", "", 418, js, `{"status":"ok"}`),
		"ErrorShape":          check("GET", "/v1/credentials", "", 403, js, `{"error":"forbidden"}`),
		"ErrorCodeMissing":    check("GET", "/v1/credentials", "", 403, js, `{"error":{"message":"forbidden"}}`),
		"NotJSON":             check("GET", "/v1/credentials", "", 200, "text/plain", `credentials`),
		"AcceptedBadRequest":  check("PUT", "/v1/credentials/slack", `{"token":5}`, 200, js, `{"credential":{"integration":"slack","updated_by":"x","created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-01T00:00:00Z"}}`),
		"UnknownRouteServed":  check("GET", "/v1/nope", "", 200, js, `{}`),
		"UnknownRouteAnswer":  check("GET", "/v1/nope", "", 404, "text/plain", `404 page not found`),
		"BadInvocationStatus": check("GET", "/v1/invocations?status=pending", "", 200, js, `{"invocations":[{"id":"x"}],"total":1}`),
	} {
		require.Error(t, err, name)
		t.Logf("%s: %v", name, err)
	}

	notice := `{"event_id":7,"event_type":"requested","invocation_id":"0193a6c0-0000-7000-8000-000000000000","occurred_at":"2025-01-01T00:00:00Z","status":"pending","mode":"require_approval"}`
	require.Error(t, contract.CheckEvent("7", "action_approval_request", []byte(notice)), "no invocation")
	require.Error(t, contract.CheckEvent("7", "action_started", []byte(`{}`)), "undocumented event")
	require.Error(t, contract.CheckEvent("x", "action_completed", []byte(`{}`)), "id not an event id")
}

// noMCP stands in for the MCP front door, so that its routes are served.
type noMCP struct{}

func (noMCP) ServeMCP(http.ResponseWriter, *http.Request, *auth.Claims, string) {}
func (noMCP) Close()                                                            {}
