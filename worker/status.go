package worker

// Invocation statuses. pending (awaiting a human) → approved (cleared to
// run) → executing → completed | failed; denied, expired, skipped and
// cancelled are terminal too.
const (
	StatusPending   = "pending"
	StatusApproved  = "approved"
	StatusExecuting = "executing"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusDenied    = "denied"
	StatusExpired   = "expired"
	StatusSkipped   = "skipped"
	StatusCancelled = "cancelled"
)

// Terminal reports whether status is final.
func Terminal(status string) bool {
	switch status {
	case StatusCompleted, StatusFailed, StatusDenied, StatusExpired, StatusSkipped, StatusCancelled:
		return true
	}
	return false
}
