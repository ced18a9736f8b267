package mcpfront_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/mcpfront"
)

// A request is answered with the id it sent, or refused: the SDK read a
// number id as a float64 made an int64, and answered 9007199254740993
// with 9007199254740992, 1.5 with 1 and 2^64 with -2^63, answers whose
// client never matched them. Such an id is refused with 400 and -32600.
func TestRequestIDs_AnsweredAsSentOrRefused(t *testing.T) {
	f := rawFront{mcpfront.New(&mcpfront.Deps{Outbox: heldOutbox{}, Catalog: fakeCatalog{n: 1}})}
	defer f.front.Close()
	a := &auth.Claims{Org: "org-a", Kind: auth.KindSandbox, SessionID: "s"}
	session, refusal := f.open(t, a)
	require.Empty(t, refusal)
	for _, id := range []string{"9007199254740993", "1.5", "18446744073709551616", "-9007199254740993", "1e400"} {
		w := f.post(a, session, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		require.Equal(t, http.StatusBadRequest, w.Code, "%s: %s", id, w.Body.String())
		require.Equal(t, "application/json", w.Header().Get("Content-Type"), id)
		var answer struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &answer), id)
		require.Equal(t, -32600, answer.Error.Code, id)
		require.Contains(t, answer.Error.Message, "id", id)
	}
	for _, id := range []string{"9007199254740992", "-9007199254740992", "0", "7", `"9007199254740993"`} {
		w := f.post(a, session, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		require.Equal(t, http.StatusOK, w.Code, "%s: %s", id, w.Body.String())
		require.Contains(t, w.Body.String(), `"id":`+id+`,`, "answered with the id it sent")
	}
	require.True(t, f.lists(session, a), "the session goes on")
}
