package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseTier(t *testing.T) {
	t.Parallel()

	tests := map[string]Tier{
		"R0": TierR0, "r0": TierR0,
		"R1": TierR1, "read": TierR1, "READ": TierR1, "low": TierR1,
		"R2": TierR2, "write": TierR2, "medium": TierR2,
		"R3": TierR3, "danger": TierR3, "high": TierR3, "r3": TierR3,
		"R4": TierR4,
	}
	for s, want := range tests {
		got, ok := ParseTier(s)
		require.True(t, ok, s)
		require.Equal(t, want, got, s)
		require.Equal(t, want, TierOf(s), s)
	}
	for _, s := range []string{"", "R5", "critical", " R1", "none"} {
		_, ok := ParseTier(s)
		require.False(t, ok, s)
		require.Equal(t, TierR4, TierOf(s), "%q is treated as the most dangerous tier", s)
	}
}

// TestTier_Mapping is the one mapping of tiers, risk words and modes the
// action contract (docs/actions.md) documents.
func TestTier_Mapping(t *testing.T) {
	t.Parallel()

	tests := []struct {
		tier    Tier
		risk    string
		mode    Mode
		mayAuto bool
	}{
		{TierR0, "read", ModeAllow, true},
		{TierR1, "read", ModeAllow, true},
		{TierR2, "write", ModeRequireApproval, true},
		{TierR3, "danger", ModeRequireApproval, false},
		{TierR4, "danger", ModeRequireApproval, false},
		{Tier(""), "danger", ModeRequireApproval, false},
		{Tier("R9"), "danger", ModeRequireApproval, false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.risk, tt.tier.Risk(), tt.tier)
		require.Equal(t, tt.mode, tt.tier.DefaultMode(), tt.tier)
		require.Equal(t, tt.mayAuto, tt.tier.MayAutoExecute(), tt.tier)
		if tt.tier.MayAutoExecute() {
			// Every risk word reads back as a tier of the same word.
			back, ok := ParseTier(tt.tier.Risk())
			require.True(t, ok)
			require.Equal(t, tt.risk, back.Risk())
		}
	}
	require.Len(t, Tiers, 5)
}

// TestResolve_HighTiersNeverAutoExecute: whatever the overrides and the
// request say, an R3, R4, missing or unknown tier never resolves to allow,
// and a deny anywhere still denies.
func TestResolve_HighTiersNeverAutoExecute(t *testing.T) {
	t.Parallel()

	stored := []string{"", "allow", "deny", "require_approval", "bogus"}
	requests := []string{"", "low", "R0", "read", "high"}
	for _, tier := range []string{"R3", "R4", "danger", "", "R7"} {
		for _, automation := range stored {
			for _, org := range stored {
				for _, requestRisk := range requests {
					in := ModeInput{AutomationOverride: automation, OrgDefault: org, Tier: tier, RequestRisk: requestRisk}
					got := Resolve(in)
					require.NotEqual(t, ModeAllow, got.Mode, "%+v", in)
					decisive := org
					if automation != "" {
						decisive = automation
					}
					if decisive == "deny" {
						require.Equal(t, ModeDeny, got.Mode, "%+v: a deny override still denies", in)
					}
					if decisive == "allow" {
						require.Equal(t, Resolution{Mode: ModeRequireApproval, Source: SourceRiskTier}, got, "%+v", in)
					}
				}
			}
		}
	}
}
