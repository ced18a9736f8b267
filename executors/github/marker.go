package github

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

const (
	// searchPerPage is the page size of the look-up for an earlier
	// attempt's issue. Issue bodies can be long, so pages are kept small.
	searchPerPage = 30

	// commentsPerPage is the page size of the look-up for an earlier
	// attempt's comment.
	commentsPerPage = 100

	// maxSearchPages bounds the look-up. Only what was created since the
	// invocation is searched, so it ends long before this in practice.
	maxSearchPages = 20

	// clockSkew is how much earlier than the invocation's first attempt the
	// look-up starts, in case GitHub's clock is behind outboxd's.
	clockSkew = 10 * time.Minute
)

// safeKey is what an idempotency key may be to appear in a marker as it is.
var safeKey = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,100}$`)

// marker is the hidden HTML comment a create action puts at the end of what
// it creates, derived from the idempotency key: the key itself (an
// invocation id) when it is plain, else its SHA-256, so nothing in it can
// end the comment. No key, no marker.
func marker(key string) string {
	if key == "" {
		return ""
	}
	if !safeKey.MatchString(key) {
		sum := sha256.Sum256([]byte(key))
		key = "sha256-" + hex.EncodeToString(sum[:])
	}
	return "<!-- outboxd:" + key + " -->"
}

// withMarker appends mark to a Markdown body, on a line of its own.
func withMarker(body, mark string) string {
	switch {
	case mark == "":
		return body
	case body == "":
		return mark
	}
	return body + "\n\n" + mark
}

// since is the time before which nothing an invocation created can exist:
// the start of its first attempt or, when unknown, the time in its id (a
// UUIDv7), less clockSkew. The first attempt can start long after the
// invocation was made (an approval, quiet hours, a pause), and what the
// repository saw meanwhile would only fill the look-up's bound. Zero when
// neither is known, and the look-up then covers everything up to its
// bound.
func since(ec executors.ExecContext) time.Time {
	from := ec.FirstStartedAt
	if from.IsZero() {
		id, err := uuid.Parse(ec.IdempotencyKey)
		if err != nil || id.Version() != 7 {
			return time.Time{}
		}
		sec, nsec := id.Time().UnixTime()
		from = time.Unix(sec, nsec)
	}
	return from.Add(-clockSkew).UTC()
}

// unverified is the failure of a look-up that reached its bound without an
// answer: creating would risk a duplicate, so the invocation fails.
func unverified(what string) error {
	return &executors.Error{
		Code: "idempotency_unverified",
		Message: fmt.Sprintf("could not tell whether an earlier attempt already created the %s: the look-up read %d "+
			"pages without reaching the invocation's time; check GitHub before invoking again", what, maxSearchPages),
	}
}

// searchedItem is the part of an issue or comment the look-up reads.
type searchedItem struct {
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
	// PullRequest is set on the pull requests the issue list includes.
	PullRequest json.RawMessage `json:"pull_request"`
}

// findIssue looks for the issue an earlier attempt created in repo, by
// mark in its body, among the issues newest first, down to the invocation's
// time. It returns the issue as GitHub shows it, or nil when there is none.
// The repository's issue list is used rather than GitHub's search, whose
// index lags behind a create.
func (s *client) findIssue(ctx context.Context, ec executors.ExecContext, repo *RepoRef, mark string) (json.RawMessage, error) {
	from := since(ec)
	query := url.Values{
		"state": {"all"}, "sort": {"created"}, "direction": {"desc"},
		"per_page": {strconv.Itoa(searchPerPage)},
	}
	if !from.IsZero() {
		// Only issues updated since: a newer issue was updated when it was
		// created, so this drops none of the candidates.
		query.Set("since", from.Format(time.RFC3339))
	}
	for page := 1; page <= maxSearchPages; page++ {
		query.Set("page", strconv.Itoa(page))
		items, err := s.page(ctx, ec, []string{"repos", repo.Owner, repo.Repo, "issues"}, query, "issues of "+repo.String())
		if err != nil {
			return nil, err
		}
		for _, raw := range items {
			var it searchedItem
			if json.Unmarshal(raw, &it) != nil {
				continue
			}
			if it.PullRequest == nil && strings.Contains(it.Body, mark) {
				return raw, nil
			}
			if !from.IsZero() && it.CreatedAt.Before(from) {
				return nil, nil // newest first: the rest are older still
			}
		}
		if len(items) < searchPerPage {
			return nil, nil
		}
	}
	return nil, unverified("issue")
}

// findComment looks for the comment an earlier attempt posted on issue
// number of repo, by mark in its body, among the comments posted since the
// invocation's time. It returns the comment, or nil when there is none.
func (s *client) findComment(ctx context.Context, ec executors.ExecContext, repo *RepoRef, number int, subject, mark string) (json.RawMessage, error) {
	query := url.Values{"per_page": {strconv.Itoa(commentsPerPage)}}
	if from := since(ec); !from.IsZero() {
		query.Set("since", from.Format(time.RFC3339))
	}
	for page := 1; page <= maxSearchPages; page++ {
		query.Set("page", strconv.Itoa(page))
		items, err := s.page(ctx, ec, []string{"repos", repo.Owner, repo.Repo, "issues", strconv.Itoa(number), "comments"}, query, subject)
		if err != nil {
			return nil, err
		}
		for _, raw := range items {
			var it searchedItem
			if json.Unmarshal(raw, &it) == nil && strings.Contains(it.Body, mark) {
				return raw, nil
			}
		}
		if len(items) < commentsPerPage {
			return nil, nil
		}
	}
	return nil, unverified("comment")
}

// page reads one page of a list.
func (s *client) page(ctx context.Context, ec executors.ExecContext, segments []string, query url.Values, subject string) ([]json.RawMessage, error) {
	ans, err := s.api.Do(ctx, ec, &httpsource.Request{Method: http.MethodGet, Segments: segments, Query: query, Subject: subject})
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(ans.Body, &items); err != nil {
		return nil, &executors.Error{
			Code:      "invalid_response",
			Message:   "GitHub answered a list of " + subject + " with something other than a list",
			Retryable: true,
		}
	}
	return items, nil
}
