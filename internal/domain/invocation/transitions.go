package invocation

// Transition is one kind of change of an invocation's status: the event the
// timeline records for it, the statuses it may start from and the status it
// leaves. The store's SQL (package invocationstore) guards each update with
// the same statuses (WHERE status IN (...)); its TestTransitions checks
// every store method against this table from every status.
type Transition struct {
	Event EventType
	From  []Status
	To    Status
	// DeadLetterOnly: the transition applies only to a failed invocation
	// that is a dead letter not yet discarded.
	DeadLetterOnly bool
}

// Transitions is the state machine, one entry per event; created, which
// has no from-status, is not in it. A transition not listed is refused
// (ErrConflict) and changes nothing.
var Transitions = []Transition{
	{Event: EventApproved, From: []Status{StatusPending}, To: StatusApproved},
	{Event: EventDenied, From: []Status{StatusPending}, To: StatusDenied},
	{Event: EventExpired, From: []Status{StatusPending}, To: StatusExpired},
	{Event: EventCancelled, From: []Status{StatusPending, StatusApproved}, To: StatusCancelled},
	// A job that is run again after its process died starts an
	// executing invocation again.
	{Event: EventStarted, From: []Status{StatusApproved, StatusExecuting}, To: StatusExecuting},
	{Event: EventCompleted, From: []Status{StatusExecuting}, To: StatusCompleted},
	// Failed and skipped also apply before the start: a gate, an unknown
	// source or a missing credential ends an invocation that never ran.
	{Event: EventFailed, From: []Status{StatusApproved, StatusExecuting}, To: StatusFailed},
	{Event: EventSkipped, From: []Status{StatusApproved, StatusExecuting}, To: StatusSkipped},
	{Event: EventRetryScheduled, From: []Status{StatusExecuting}, To: StatusApproved},
	{Event: EventSnoozed, From: []Status{StatusExecuting}, To: StatusApproved},
	{Event: EventReplayed, From: []Status{StatusFailed}, To: StatusApproved, DeadLetterOnly: true},
	// An edit leaves a pending invocation pending.
	{Event: EventEdited, From: []Status{StatusPending}, To: StatusPending},
	// An approved intent that changed before the call asks again.
	{Event: EventIntentChanged, From: []Status{StatusApproved, StatusExecuting}, To: StatusPending},
	// A discarded dead letter stays failed; it leaves the dead-letter list.
	{Event: EventDiscarded, From: []Status{StatusFailed}, To: StatusFailed, DeadLetterOnly: true},
}

// Next returns the status event leads to from from, and false when the
// state machine refuses it. For a DeadLetterOnly transition, from must also
// be an undiscarded dead letter, which the status alone does not tell.
func Next(event EventType, from Status) (Status, bool) {
	for _, t := range Transitions {
		if t.Event != event {
			continue
		}
		for _, f := range t.From {
			if f == from {
				return t.To, true
			}
		}
		return "", false
	}
	return "", false
}
