package worker_test

import (
	"fmt"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/slack/slacktest"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// TestExecuteWorker_ResumesSlackLookUp: a retry's look-up for the post an
// earlier attempt lost, rate-limited by Slack on its second page (history
// allows an app outside the Marketplace one call a minute, 15 messages
// each), snoozes and then reads that second page, not the first again:
// starting over met the limit on the second page after every snooze, and
// the invocation failed when its provider waits ran out. A new attempt
// starts over, as something may have been posted since.
func TestExecuteWorker_ResumesSlackLookUp(t *testing.T) {
	t.Parallel()

	// limited runs an invocation whose first post's answer is lost, 20
	// messages posted after it, and its retry, whose look-up reads the
	// first page and is rate-limited on the second.
	limited := func(t *testing.T) (*unitBundle, *slacktest.Server, *rivertype.JobRow) {
		t.Helper()
		fake := slacktest.New(t)
		fake.MaxPageSize(15)
		b := setupUnitOn(t, fake.URL())
		fake.AfterPost(func(slacktest.Message) slacktest.Fault { return slacktest.Drop })
		_, job := b.approved(t, func(p *invocation.CreateParams) { p.Retry = &invocation.Retry{MaxAttempts: 3} })
		res, _ := b.work(t, job)
		require.Equal(t, river.EventKindJobFailed, res.EventKind, "a lost answer is retried")
		fake.AfterPost(nil)
		for i := range 20 {
			fake.Seed(slacktest.Message{Channel: "C0123456789", Text: fmt.Sprint("chatter ", i)})
		}

		fake.LimitHistory(1)
		res, got := b.work(t, res.Job)
		require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "the look-up waits for Slack's limit")
		require.EqualValues(t, 1, got.ProviderWaits)
		lookups := fake.Calls("conversations.history")
		require.Len(t, lookups, 2)
		require.Empty(t, lookups[0].Query.Get("cursor"))
		require.NotEmpty(t, lookups[1].Query.Get("cursor"))
		return b, fake, res.Job
	}

	t.Run("AfterTheSnoozeReadsThePageItStoppedAt", func(t *testing.T) {
		t.Parallel()
		b, fake, job := limited(t)

		fake.LimitHistory(1) // the next minute's call
		res, got := b.work(t, job)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		require.Equal(t, invocation.StatusCompleted, got.Status)
		require.True(t, got.Conflict, "completed with the post found")
		messages := fake.Messages()
		require.Len(t, messages, 21, "exactly one post")
		require.Equal(t, messages[0].TS, *got.ProviderRef)
		require.Len(t, fake.Calls("chat.postMessage"), 1)

		lookups := fake.Calls("conversations.history")
		require.Len(t, lookups, 3, "page 1 once, page 2 twice")
		require.Equal(t, lookups[1].Query.Get("cursor"), lookups[2].Query.Get("cursor"))
	})

	t.Run("ANewAttemptStartsOver", func(t *testing.T) {
		t.Parallel()
		b, fake, job := limited(t)

		// The second page stays limited: the next run goes on at it, is
		// limited again and snoozes; the one after has no provider waits
		// left and becomes a new attempt.
		fake.LimitHistory(0)
		res, _ := b.work(t, job)
		require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
		res, _ = b.work(t, res.Job)
		require.Equal(t, river.EventKindJobFailed, res.EventKind, "out of provider waits: retried")
		lookups := fake.Calls("conversations.history")
		require.Len(t, lookups, 4)
		for _, l := range lookups[1:] {
			require.Equal(t, lookups[1].Query.Get("cursor"), l.Query.Get("cursor"), "each run of the attempt goes on at page 2")
		}

		fake.LimitHistory(-1)
		res, got := b.work(t, res.Job)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		require.True(t, got.Conflict)
		require.Len(t, fake.Messages(), 21)
		lookups = fake.Calls("conversations.history")
		require.Len(t, lookups, 6, "the new attempt reads pages 1 and 2")
		require.Empty(t, lookups[4].Query.Get("cursor"))
		require.NotEmpty(t, lookups[5].Query.Get("cursor"))
	})
}
