package invocation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
)

// Notice is what an event tells the people and agents watching: the three
// notifications of the Actions specification. Most events (started,
// retry_scheduled, snoozed, replayed, discarded, and created in any status
// but pending) are no notice. Which events are notices, and of which kind,
// is the notice column of invocation_events (migration 024): feeds, their
// indexes and the announcing trigger all read it.
type Notice string

const (
	// NoticeApprovalRequest: an invocation entered pending (created).
	NoticeApprovalRequest Notice = "action_approval_request"
	// NoticeApprovalResult: a pending invocation was approved, denied or
	// expired.
	NoticeApprovalResult Notice = "action_approval_result"
	// NoticeCompleted: an invocation finished: completed (a provider
	// conflict counts as success), failed, skipped or cancelled.
	NoticeCompleted Notice = "action_completed"
)

// Notices lists every notice kind.
var Notices = []Notice{NoticeApprovalRequest, NoticeApprovalResult, NoticeCompleted}

// Cursor is a position in a feed. Feeds run in (XID, ID) order — the order
// transactions became visible below the horizon — not in id order, since an
// id is taken at insert and an earlier id can commit later. The zero
// Cursor is before every event.
type Cursor struct {
	XID int64 // the xid8 of the event's transaction
	ID  int64 // the event id
}

// positionIDDigits is how many decimal digits of a position hold the event
// id: as many as the largest int64 has.
const positionIDDigits = 19

// Position is the cursor as one decimal number that grows in feed order,
// the id a stream gives each event: the transaction's xid followed by the
// event id zero-padded to 19 digits (xid × 10¹⁹ + id). It is longer than
// 19 digits, so it never reads as a plain event id.
func (c Cursor) Position() string {
	return fmt.Sprintf("%d%0*d", c.XID, positionIDDigits, c.ID)
}

// ParsePosition reads a Position back. ok is false for anything that is not
// one.
func ParsePosition(s string) (c Cursor, ok bool) {
	if len(s) <= positionIDDigits || strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return c, false
	}
	split := len(s) - positionIDDigits
	xid, err1 := strconv.ParseInt(s[:split], 10, 64)
	id, err2 := strconv.ParseInt(s[split:], 10, 64)
	if err1 != nil || err2 != nil || xid == 0 {
		return c, false
	}
	return Cursor{XID: xid, ID: id}, true
}

// FeedItem is one event of a feed with the invocation as it is now.
type FeedItem struct {
	Event
	Notice     Notice
	Invocation Invocation
	Cursor     Cursor
}

// FeedParams select a feed's events.
type FeedParams struct {
	Org string
	// SessionID limits the feed to a session's invocations ("" for all).
	SessionID string
	After     Cursor
	// Notices limits the kinds; empty means every kind.
	Notices []Notice
	// Limit bounds the answer; default 100.
	Limit int32
}

// Feed returns the organization's notices after p.After, oldest first, up
// to the horizon: events of transactions that may still have earlier
// neighbours in flight are held back, and held reports whether any were,
// so the caller asks again soon.
func (s *Store) Feed(ctx context.Context, db DB, p *FeedParams) (items []FeedItem, held bool, err error) {
	kinds := make([]string, 0, len(Notices))
	for _, n := range Notices {
		if len(p.Notices) == 0 || slices.Contains(p.Notices, n) {
			kinds = append(kinds, string(n))
		}
	}
	rows, err := s.q.FeedList(ctx, db, dbsqlc.FeedListParams{
		OrganizationID: p.Org, SessionID: nilIfEmpty(p.SessionID), Kinds: kinds, Max: cmp.Or(p.Limit, 100),
		AfterXid: strconv.FormatInt(p.After.XID, 10), AfterID: p.After.ID,
	})
	if err != nil {
		return nil, false, fmt.Errorf("reading event feed: %w", err)
	}
	items, held = feedItems(rows)
	return items, held, nil
}

// FeedCursor returns the position of one of the organization's events, to
// resume a feed after it. An unknown id is ErrEventNotFound.
func (s *Store) FeedCursor(ctx context.Context, db DB, org string, eventID int64) (Cursor, error) {
	xid, err := s.q.FeedCursor(ctx, db, dbsqlc.FeedCursorParams{ID: eventID, OrganizationID: org})
	if errors.Is(err, pgx.ErrNoRows) {
		return Cursor{}, fmt.Errorf("%w: %d", ErrEventNotFound, eventID)
	}
	if err != nil {
		return Cursor{}, fmt.Errorf("locating event: %w", err)
	}
	return Cursor{XID: xid, ID: eventID}, nil
}

// FeedNow returns the position of the present: a feed that starts here
// delivers what becomes visible from now on, and perhaps a few events of
// transactions that committed just before.
func (s *Store) FeedNow(ctx context.Context, db DB) (Cursor, error) {
	horizon, err := s.q.FeedHorizon(ctx, db)
	if err != nil {
		return Cursor{}, fmt.Errorf("reading the feed horizon: %w", err)
	}
	return Cursor{XID: horizon}, nil
}

// FeedScope says whose events a relay reads: every organization's (All),
// or those of Orgs.
type FeedScope struct {
	All  bool
	Orgs []string
}

// FeedAll returns the events that make a notice of the organizations in
// scope after after, oldest first, up to the horizon, for relays that keep
// their own cursor; next is where the relay's cursor goes once it has
// handled them. Events out of scope are passed over for good: next moves
// beyond them, up to the horizon when nothing is left to read, so a relay
// with nothing to relay reads nothing again.
func (s *Store) FeedAll(ctx context.Context, db DB, after Cursor, scope FeedScope, limit int32) (items []FeedItem, next Cursor, err error) {
	// The horizon is read first: every transaction below it has ended, so
	// its events are all visible to the read that follows.
	horizon, err := s.FeedNow(ctx, db)
	if err != nil {
		return nil, after, err
	}
	next = after
	if horizon.XID > after.XID {
		next = horizon
	}
	if !scope.All && len(scope.Orgs) == 0 {
		return nil, next, nil
	}
	limit = cmp.Or(limit, 100)
	rows, err := s.q.FeedListAll(ctx, db, dbsqlc.FeedListAllParams{
		AfterXid: strconv.FormatInt(after.XID, 10), AfterID: after.ID,
		AllOrganizations: scope.All, Organizations: scope.Orgs, Max: limit,
	})
	if err != nil {
		return nil, after, fmt.Errorf("reading event feed: %w", err)
	}
	rs := make([]dbsqlc.FeedListRow, len(rows))
	for i, r := range rows {
		rs[i] = dbsqlc.FeedListRow(r)
	}
	items, held := feedItems(rs)
	switch {
	case held || len(rows) == int(limit): // more to read after the last item
		if len(items) == 0 {
			return nil, after, nil
		}
		return items, items[len(items)-1].Cursor, nil
	case len(items) > 0 && items[len(items)-1].Cursor.after(next):
		next = items[len(items)-1].Cursor
	}
	return items, next, nil
}

// after reports whether c comes after d in feed order.
func (c Cursor) after(d Cursor) bool {
	return c.XID > d.XID || c.XID == d.XID && c.ID > d.ID
}

// feedItems turns feed rows into items, up to the first event not settled
// yet (held is then true).
func feedItems(rows []dbsqlc.FeedListRow) (items []FeedItem, held bool) {
	for _, r := range rows {
		if !r.Settled {
			return items, true
		}
		items = append(items, FeedItem{
			Event: Event{
				ID: r.EventID, InvocationID: r.ActionInvocation.ID, Seq: r.Seq, Type: EventType(r.Type),
				From: Status(deref(r.FromStatus)), To: Status(r.ToStatus), Actor: deref(r.Actor), Reason: deref(r.Reason),
				CreatedAt: r.EventCreatedAt,
			},
			Notice:     Notice(r.Kind),
			Invocation: fromRow(r.ActionInvocation),
			Cursor:     Cursor{XID: r.Xid, ID: r.EventID},
		})
	}
	return items, false
}
