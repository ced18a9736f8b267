package webhook_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// recording is a loopback endpoint that takes every delivery (204) and
// keeps it, for the test to verify with the secrets it likes.
type recording struct {
	server *httptest.Server
	mu     sync.Mutex
	got    []recorded
}

type recorded struct {
	header http.Header
	body   []byte
}

func newRecording(t *testing.T) *recording {
	rc := &recording{}
	rc.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, recorded{header: r.Header.Clone(), body: body})
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.server.Close)
	return rc
}

// next waits for the delivery after the n already taken and returns it.
func (rc *recording) next(t *testing.T, n int) recorded {
	t.Helper()
	require.Eventually(t, func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return len(rc.got) > n
	}, 15*time.Second, 20*time.Millisecond)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	require.Len(t, rc.got, n+1, "one delivery per invocation")
	return rc.got[n]
}

// verifies says whether a receiver holding secret accepts d, as the
// Standard Webhooks library verifies it.
func verifies(t *testing.T, secret string, d recorded) bool {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	return wh.Verify(d.body, d.header) == nil
}

// TestWebhook_RotationOverlap: after a rotation, deliveries are signed
// with the new secret and, until the overlap ends, with the one it
// replaced, so a receiver not yet updated still verifies them; with an
// overlap of "0s", or once it has passed, only the new secret verifies.
// The previous secret is never shown.
func TestWebhook_RotationOverlap(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-hooks")
	rc := newRecording(t)
	id, first := createWebhook(t, b, rc.server.URL+"/hook", "action_approval_request")
	rotate := func(body any) string {
		t.Helper()
		r := b.Do("POST", "/v1/webhooks/"+id+"/rotate-secret", b.Admin(), body)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		return r.Body["secret"].(string)
	}
	delivered := 0
	deliver := func() recorded {
		t.Helper()
		r := b.Invoke("send_message", message)
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		d := rc.next(t, delivered)
		delivered++
		return d
	}

	d := deliver()
	require.True(t, verifies(t, first, d))
	require.Len(t, strings.Fields(d.header.Get("webhook-signature")), 1, "one secret, one signature")

	// The default overlap: the old secret and the new one both verify.
	second := rotate(nil)
	d = deliver()
	require.Len(t, strings.Fields(d.header.Get("webhook-signature")), 2)
	require.True(t, verifies(t, first, d), "the receiver not yet updated accepts it")
	require.True(t, verifies(t, second, d), "the receiver updated accepts it")
	g := b.Do("GET", "/v1/webhooks/"+id, b.Admin(), nil)
	require.NotNil(t, g.Body["webhook"].(map[string]any)["previous_valid_until"])
	require.NotContains(t, string(g.Raw), first)
	require.NotContains(t, string(g.Raw), second)

	// "0s": the new secret alone; neither of the earlier ones.
	third := rotate(map[string]any{"overlap": "0s"})
	d = deliver()
	require.True(t, verifies(t, third, d))
	require.False(t, verifies(t, second, d), "no overlap")
	require.False(t, verifies(t, first, d))

	// An overlap that has passed (set back in the database, not waited
	// for): the new secret alone again.
	fourth := rotate(map[string]any{"overlap": "1h"})
	d = deliver()
	require.True(t, verifies(t, third, d), "within the overlap")
	require.True(t, verifies(t, fourth, d))
	_, err := b.Pool.Exec(context.Background(), `UPDATE webhooks SET previous_until = now() - interval '1 second' WHERE id = $1`, id)
	require.NoError(t, err)
	d = deliver()
	require.True(t, verifies(t, fourth, d))
	require.False(t, verifies(t, third, d), "the overlap has ended")
	require.Len(t, strings.Fields(d.header.Get("webhook-signature")), 1)
	g = b.Do("GET", "/v1/webhooks/"+id, b.Admin(), nil)
	require.Nil(t, g.Body["webhook"].(map[string]any)["previous_valid_until"], "shown while it still signs")
}
