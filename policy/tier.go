package policy

import "strings"

// Tier is an action's risk tier, R0 to R4: the risk classification of the
// Action API contract, carried by every action definition. It decides the
// mode an action infers when no override applies, and whether it may ever
// run without a human:
//
//	tier  what it does                                   inferred mode     risk word
//	R0    nothing outside outboxd (the demo echo)         allow             read
//	R1    reads from a provider                           allow             read
//	R2    a write: posts, creates or changes something    require_approval  write
//	R3    a destructive or irreversible write             require_approval  danger
//	R4    critical: money, access, mass deletion          require_approval  danger
//
// R3 and R4 never auto-execute: they queue for a human, an override may
// still deny them, and an allow override does not make them run
// unattended. A missing or unknown tier counts as R4.
type Tier string

// The five tiers.
const (
	TierR0 Tier = "R0"
	TierR1 Tier = "R1"
	TierR2 Tier = "R2"
	TierR3 Tier = "R3"
	TierR4 Tier = "R4"
)

// Tiers lists the tiers, lowest risk first.
var Tiers = []Tier{TierR0, TierR1, TierR2, TierR3, TierR4}

// ParseTier reads a tier, case-insensitively: R0 to R4, or a risk word of
// the one mapping between the two — read (R1), write (R2), danger (R3) —
// or an envelope's risk hint — low (R1), medium (R2), high (R3). It
// reports false for anything else, the empty string included.
func ParseTier(s string) (Tier, bool) {
	switch strings.ToLower(s) {
	case "r0":
		return TierR0, true
	case "r1", "read", "low":
		return TierR1, true
	case "r2", "write", "medium":
		return TierR2, true
	case "r3", "danger", "high":
		return TierR3, true
	case "r4":
		return TierR4, true
	}
	return "", false
}

// TierOf returns the tier s names (see ParseTier), or R4 when it names
// none: a missing or unknown tier is treated as the most dangerous.
func TierOf(s string) Tier {
	if t, ok := ParseTier(s); ok {
		return t
	}
	return TierR4
}

// Risk returns the tier's risk word: read (R0, R1), write (R2) or danger
// (R3, R4, and anything that is not a tier).
func (t Tier) Risk() string {
	switch t {
	case TierR0, TierR1:
		return "read"
	case TierR2:
		return "write"
	}
	return "danger"
}

// DefaultMode is the mode the tier infers when no override applies: allow
// for R0 and R1, require_approval for everything else.
func (t Tier) DefaultMode() Mode {
	if t == TierR0 || t == TierR1 {
		return ModeAllow
	}
	return ModeRequireApproval
}

// MayAutoExecute reports whether an action of the tier may ever run
// without a human: true for R0 to R2, false for R3, R4 and anything that
// is not a tier.
func (t Tier) MayAutoExecute() bool {
	return t == TierR0 || t == TierR1 || t == TierR2
}
