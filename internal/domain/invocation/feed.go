package invocation

import (
	"fmt"
	"strconv"
	"strings"
)

// Notice is what an event tells the people and agents watching: the three
// notifications of the Actions specification. Most events (started,
// retry_scheduled, snoozed, replayed, discarded, and created in any status
// but pending) are no notice. Which events are notices, and of which kind,
// is the notice column of invocation_events (migration 024): feeds, their
// indexes and the announcing trigger all read it.
type Notice string

const (
	// NoticeApprovalRequest: an invocation entered pending (created, or
	// asked again when what an approval approved changed: intent_changed).
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

// FeedScope says whose events a relay reads: every organization's (All),
// or those of Orgs.
type FeedScope struct {
	All  bool
	Orgs []string
}

// After reports whether c comes after d in feed order.
func (c Cursor) After(d Cursor) bool {
	return c.XID > d.XID || c.XID == d.XID && c.ID > d.ID
}
