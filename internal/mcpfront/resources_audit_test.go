package mcpfront_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/mcpfront"
)

// guidelessCatalog is fakeCatalog with no guide of any source.
type guidelessCatalog struct{ fakeCatalog }

func (guidelessCatalog) Guide(context.Context, *catalog.Caller, string) (string, error) {
	return "", errs.NotFound
}

// A resource URI with a NUL, another control character or bytes that are
// not UTF-8 is not found, as JSON the client reads, and its session goes
// on. The SDK's own not found error quoted the URI as Go does ("\x00"),
// data that is not JSON: the session's connection broke on it, that
// request and every later one of the session were answered 200 with an
// empty body.
func TestResources_OddURIIsNotFoundAndTheSessionGoesOn(t *testing.T) {
	f := rawFront{mcpfront.New(&mcpfront.Deps{Outbox: heldOutbox{}, Catalog: guidelessCatalog{fakeCatalog{n: 1}}})}
	defer f.front.Close()
	a := &auth.Claims{Org: "org-a", Kind: auth.KindSandbox, SessionID: "s"}
	session, refusal := f.open(t, a)
	require.Empty(t, refusal)
	for i, uri := range []string{
		`outboxd://guide\u0000`, `outboxd://guides/sla\u0000ck`, `outboxd://guides/a\u0001`,
		`outboxd://guides/\u007f`, "outboxd://guides/\xff", `outboxd://guides/\udbff\udfff`,
	} {
		w := f.post(a, session, `{"jsonrpc":"2.0","id":`+strconv.Itoa(10+i)+`,"method":"resources/read","params":{"uri":"`+uri+`"}}`)
		require.Equal(t, http.StatusOK, w.Code, uri)
		data, ok := strings.CutPrefix(strings.TrimSpace(w.Body.String()), "event: message\ndata: ")
		require.True(t, ok, "%s: an answer: %q", uri, w.Body.String())
		var answer struct {
			Error struct {
				Code int             `json:"code"`
				Data json.RawMessage `json:"data"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &answer), uri)
		require.Equal(t, -32602, answer.Error.Code, uri)
		require.Contains(t, string(answer.Error.Data), `"uri":`, uri)
		require.True(t, f.lists(session, a), "%s: the session goes on", uri)
	}
}
