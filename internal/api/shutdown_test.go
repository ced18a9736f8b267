package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/outbox"
)

// TestInvoke_ShutdownAnswersAWaitingInvoke: an allow-mode invoke still
// waiting for its result when the process shuts down answers at once with
// its invocation (202, to poll), as the MCP front door's waits do, rather
// than holding the shutdown until sync_wait and being cut off without an
// answer, its invocation's id unknown to its caller.
func TestInvoke_ShutdownAnswersAWaitingInvoke(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	b := apptest.Start(t, &apptest.Options{Outbox: outbox.Config{SyncWait: 5 * time.Minute},
		SlackFunc: func(w http.ResponseWriter, r *http.Request) {
			select {
			case arrived <- struct{}{}:
			default:
			}
			<-release
			apptest.SlackOK(w, r)
		}})
	b.StoreSlackToken("xoxb-shutdown")
	b.SetModes(map[string]string{"slack:send_message": "allow"})

	answered := make(chan *apptest.Response, 1)
	go func() { answered <- b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "hi"}) }()
	<-arrived // the call is at Slack: the invoke waits for its result
	stopped := make(chan struct{})
	go func() { b.Stop(); close(stopped) }()

	var r *apptest.Response
	select {
	case r = <-answered:
	case <-time.After(time.Minute): // a guard against a hang, not a measure
		t.Fatal("the waiting invoke did not answer when the process shut down")
	}
	close(release)
	<-stopped
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	require.NotEmpty(t, r.Body["invocation_id"])
	require.Equal(t, "approved", r.Body["status"])
}
