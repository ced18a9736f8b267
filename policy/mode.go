package policy

// Mode is the policy decision for an invocation.
type Mode string

// Modes are an organization's or an automation's mode overrides, keyed
// "<source>:<action>".
type Modes map[string]Mode

const (
	// ModeAllow executes the invocation without human involvement.
	ModeAllow Mode = "allow"
	// ModeDeny refuses the invocation.
	ModeDeny Mode = "deny"
	// ModeRequireApproval holds the invocation until a human approves it.
	ModeRequireApproval Mode = "require_approval"
)

// ParseMode reports whether s is exactly one of the valid modes. Stored
// values are not normalised (no trimming, no case folding) so that anything
// unexpected is treated as unknown and denies.
func ParseMode(s string) (Mode, bool) {
	switch m := Mode(s); m {
	case ModeAllow, ModeDeny, ModeRequireApproval:
		return m, true
	}
	return "", false
}

// ModeSource records which rule produced a Resolution's mode; it is stored
// on the invocation as mode_source so an operator can see why a decision
// was made.
type ModeSource string

const (
	// SourceAutomationOverride means an automation-scoped override decided.
	SourceAutomationOverride ModeSource = "automation_override"
	// SourceOrgDefault means an organization-scoped override decided.
	SourceOrgDefault ModeSource = "org_default"
	// SourceInferredDefault means the action definition's risk hint decided.
	SourceInferredDefault ModeSource = "inferred_default"
	// SourceRequest means the request tightened the mode (a risk hint or
	// approval=required on the envelope).
	SourceRequest ModeSource = "request"
	// SourceDriftGuard means a drifted connector tool was downgraded from
	// allow to require_approval.
	SourceDriftGuard ModeSource = "drift_guard"
	// SourceRiskTier means an allow was downgraded to require_approval
	// because the action's tier (R3, R4) never auto-executes.
	SourceRiskTier ModeSource = "risk_tier"
)

// Resolution is the outcome of the mode cascade.
type Resolution struct {
	// Mode is the effective mode.
	Mode Mode
	// Source is the rule that produced Mode.
	Source ModeSource
	// DeniedReason explains a deny that did not come from a valid stored
	// mode, such as "unknown_mode:<value>"; empty otherwise.
	DeniedReason string
}

// ModeInput is everything Resolve needs. Stored values are passed raw so
// that Resolve, not the caller, decides what an invalid value means.
type ModeInput struct {
	// AutomationOverride is the raw stored automation-scoped mode, "" when
	// there is none.
	AutomationOverride string
	// OrgDefault is the raw stored organization-scoped mode, "" when there
	// is none.
	OrgDefault string
	// Tier is the action definition's risk tier (R0-R4, or a risk word
	// ParseTier reads); "" or anything else counts as R4.
	Tier string
	// RequestRisk is an optional risk hint on the request (low, medium,
	// high, read, write, danger, R0-R4). It can only tighten the mode.
	RequestRisk string
	// RequireApproval is set when the request asked for approval=required.
	// It can only tighten the mode.
	RequireApproval bool
}

// unknownModePrefix prefixes DeniedReason when a stored mode is invalid.
const unknownModePrefix = "unknown_mode:"

// Resolve runs the mode cascade (automation override, then organization
// default, then the mode the action's tier infers), keeps an action whose
// tier never auto-executes (R3, R4, missing) from running unattended
// whatever allowed it, and then lets the request tighten the result. A
// non-empty stored value that is not a valid mode denies rather than
// falling through to the next level, because skipping a level an admin
// configured could loosen what they intended.
func Resolve(in ModeInput) Resolution {
	tier := TierOf(in.Tier)
	var res Resolution
	switch {
	case in.AutomationOverride != "":
		res = storedResolution(in.AutomationOverride, SourceAutomationOverride)
	case in.OrgDefault != "":
		res = storedResolution(in.OrgDefault, SourceOrgDefault)
	default:
		res = Resolution{Mode: tier.DefaultMode(), Source: SourceInferredDefault}
	}
	if res.Mode == ModeAllow && !tier.MayAutoExecute() {
		res = Resolution{Mode: ModeRequireApproval, Source: SourceRiskTier}
	}

	tightened := res.Mode
	if in.RequestRisk != "" {
		tightened = Stricter(tightened, InferMode(in.RequestRisk))
	}
	if in.RequireApproval {
		tightened = Stricter(tightened, ModeRequireApproval)
	}
	if tightened != res.Mode {
		res.Mode = tightened
		res.Source = SourceRequest
	}
	return res
}

func storedResolution(raw string, source ModeSource) Resolution {
	mode, ok := ParseMode(raw)
	if !ok {
		return Resolution{Mode: ModeDeny, Source: source, DeniedReason: unknownModePrefix + raw}
	}
	return Resolution{Mode: mode, Source: source}
}

// InferMode maps a tier or risk hint (see ParseTier) to its default mode:
// allow for R0 and R1 (read, low), require_approval for the rest. A missing
// or unrecognised hint counts as R4 and requires approval, the conservative
// choice for an action nobody has classified.
func InferMode(risk string) Mode {
	return TierOf(risk).DefaultMode()
}

// ValidRisk reports whether s is a recognised tier or risk hint (see
// ParseTier), so that a bad hint on a request can be rejected with a 400
// instead of being silently treated as unknown. The empty string is not a
// hint; callers check it only when one was supplied.
func ValidRisk(s string) bool {
	_, ok := ParseTier(s)
	return ok
}

// Stricter returns the more restrictive of a and b (deny, then
// require_approval, then allow). An invalid mode counts as deny and makes
// Stricter return ModeDeny, so a corrupt value can never loosen a decision.
func Stricter(a, b Mode) Mode {
	if _, ok := ParseMode(string(a)); !ok {
		return ModeDeny
	}
	if _, ok := ParseMode(string(b)); !ok {
		return ModeDeny
	}
	if modeRank(b) > modeRank(a) {
		return b
	}
	return a
}

func modeRank(m Mode) int {
	switch m {
	case ModeAllow:
		return 0
	case ModeRequireApproval:
		return 1
	default:
		return 2
	}
}

// ApplyDriftGuard downgrades an allow to require_approval when a connector
// tool's definition has drifted since an admin reviewed it, so a changed tool
// cannot run unattended. It never upgrades: require_approval and deny are
// returned unchanged, and nothing changes when drifted is false.
func ApplyDriftGuard(r Resolution, drifted bool) Resolution {
	if drifted && r.Mode == ModeAllow {
		r.Mode = ModeRequireApproval
		r.Source = SourceDriftGuard
	}
	return r
}
