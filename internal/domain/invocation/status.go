package invocation

// Status is where an invocation stands. pending (awaiting a human) →
// approved (cleared to run) → executing → completed | failed; denied,
// expired, skipped and cancelled are terminal too.
type Status string

const (
	StatusPending   Status = "pending"
	StatusApproved  Status = "approved"
	StatusExecuting Status = "executing"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusDenied    Status = "denied"
	StatusExpired   Status = "expired"
	StatusSkipped   Status = "skipped"
	StatusCancelled Status = "cancelled"
)

// Statuses lists every status.
var Statuses = []Status{
	StatusPending, StatusApproved, StatusExecuting, StatusCompleted,
	StatusFailed, StatusDenied, StatusExpired, StatusSkipped, StatusCancelled,
}

// Terminal reports whether the status is final. A failed invocation is
// final unless an operator replays the dead letter.
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusDenied, StatusExpired, StatusSkipped, StatusCancelled:
		return true
	}
	return false
}

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if s == v {
			return true
		}
	}
	return false
}

// EventType names a transition in the timeline.
type EventType string

const (
	EventCreated        EventType = "created"
	EventApproved       EventType = "approved"
	EventDenied         EventType = "denied"
	EventExpired        EventType = "expired"
	EventCancelled      EventType = "cancelled"
	EventStarted        EventType = "started"
	EventCompleted      EventType = "completed"
	EventFailed         EventType = "failed"
	EventSkipped        EventType = "skipped"
	EventRetryScheduled EventType = "retry_scheduled"
	EventSnoozed        EventType = "snoozed"
	EventReplayed       EventType = "replayed"
	EventDiscarded      EventType = "discarded"
	// EventEdited: an approver changed the params of a pending invocation
	// (it stays pending).
	EventEdited EventType = "edited"
	// EventIntentChanged: what an approval approved changed before the
	// call (package intent); the invocation is pending again.
	EventIntentChanged EventType = "intent_changed"
)
