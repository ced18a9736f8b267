package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseMode(t *testing.T) {
	t.Parallel()

	for _, s := range []string{"allow", "deny", "require_approval"} {
		mode, ok := ParseMode(s)
		require.True(t, ok, s)
		require.Equal(t, Mode(s), mode)
	}
	for _, s := range []string{"", "Allow", " allow", "DENY", "approve", "require-approval"} {
		mode, ok := ParseMode(s)
		require.False(t, ok, s)
		require.Empty(t, mode)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   ModeInput
		want Resolution
	}{
		{
			name: "AutomationOverrideWins",
			in:   ModeInput{AutomationOverride: "allow", OrgDefault: "deny", Tier: "R2"},
			want: Resolution{Mode: ModeAllow, Source: SourceAutomationOverride},
		},
		{
			name: "AutomationOverrideDeny",
			in:   ModeInput{AutomationOverride: "deny", OrgDefault: "allow", Tier: "R1"},
			want: Resolution{Mode: ModeDeny, Source: SourceAutomationOverride},
		},
		{
			name: "OrgDefaultWhenNoOverride",
			in:   ModeInput{OrgDefault: "require_approval", Tier: "R0"},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceOrgDefault},
		},
		{
			name: "OrgDefaultAllowOverridesR2",
			in:   ModeInput{OrgDefault: "allow", Tier: "R2"},
			want: Resolution{Mode: ModeAllow, Source: SourceOrgDefault},
		},
		{
			name: "InferredR0Allows",
			in:   ModeInput{Tier: "R0"},
			want: Resolution{Mode: ModeAllow, Source: SourceInferredDefault},
		},
		{
			name: "InferredR1Allows",
			in:   ModeInput{Tier: "R1"},
			want: Resolution{Mode: ModeAllow, Source: SourceInferredDefault},
		},
		{
			name: "InferredR2RequiresApproval",
			in:   ModeInput{Tier: "R2"},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceInferredDefault},
		},
		{
			name: "InferredR3QueuesForAHuman",
			in:   ModeInput{Tier: "R3"},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceInferredDefault},
		},
		{
			name: "InferredR4QueuesForAHuman",
			in:   ModeInput{Tier: "R4"},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceInferredDefault},
		},
		{
			name: "RiskWordsMapOntoTiers",
			in:   ModeInput{Tier: "read"},
			want: Resolution{Mode: ModeAllow, Source: SourceInferredDefault},
		},
		{
			name: "InferredMissingTierRequiresApproval",
			in:   ModeInput{},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceInferredDefault},
		},
		{
			name: "OrgAllowDoesNotAutoExecuteR3",
			in:   ModeInput{OrgDefault: "allow", Tier: "R3"},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceRiskTier},
		},
		{
			name: "AutomationAllowDoesNotAutoExecuteR4",
			in:   ModeInput{AutomationOverride: "allow", OrgDefault: "deny", Tier: "R4"},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceRiskTier},
		},
		{
			name: "AllowDoesNotAutoExecuteMissingTier",
			in:   ModeInput{OrgDefault: "allow"},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceRiskTier},
		},
		{
			name: "AllowDoesNotAutoExecuteUnknownTier",
			in:   ModeInput{OrgDefault: "allow", Tier: "R5"},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceRiskTier},
		},
		{
			name: "DenyOverrideStillDeniesR3",
			in:   ModeInput{OrgDefault: "deny", Tier: "R3"},
			want: Resolution{Mode: ModeDeny, Source: SourceOrgDefault},
		},
		{
			name: "DenyOverrideStillDeniesR4",
			in:   ModeInput{AutomationOverride: "deny", Tier: "R4"},
			want: Resolution{Mode: ModeDeny, Source: SourceAutomationOverride},
		},
		{
			name: "RequireApprovalOverrideOnR3",
			in:   ModeInput{OrgDefault: "require_approval", Tier: "R3"},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceOrgDefault},
		},
		{
			name: "UnknownAutomationOverrideDenies",
			in:   ModeInput{AutomationOverride: "yolo", OrgDefault: "allow", Tier: "R1"},
			want: Resolution{Mode: ModeDeny, Source: SourceAutomationOverride, DeniedReason: "unknown_mode:yolo"},
		},
		{
			name: "UnknownOrgDefaultDenies",
			in:   ModeInput{OrgDefault: "Allow", Tier: "R1"},
			want: Resolution{Mode: ModeDeny, Source: SourceOrgDefault, DeniedReason: "unknown_mode:Allow"},
		},
		{
			name: "WhitespaceStoredModeDenies",
			in:   ModeInput{AutomationOverride: " "},
			want: Resolution{Mode: ModeDeny, Source: SourceAutomationOverride, DeniedReason: "unknown_mode: "},
		},
		{
			name: "RequestRiskHighQueuesForAHuman",
			in:   ModeInput{OrgDefault: "allow", Tier: "R1", RequestRisk: "high"},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceRequest},
		},
		{
			name: "RequestRiskMediumTightensAllow",
			in:   ModeInput{Tier: "R1", RequestRisk: "medium"},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceRequest},
		},
		{
			name: "RequestRiskNeverLoosens",
			in:   ModeInput{AutomationOverride: "deny", RequestRisk: "low"},
			want: Resolution{Mode: ModeDeny, Source: SourceAutomationOverride},
		},
		{
			name: "RequestRiskLowKeepsApproval",
			in:   ModeInput{Tier: "R2", RequestRisk: "low"},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceInferredDefault},
		},
		{
			name: "RequestRiskLowKeepsTierGuard",
			in:   ModeInput{OrgDefault: "allow", Tier: "R3", RequestRisk: "R0"},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceRiskTier},
		},
		{
			name: "RequestRiskUnknownTightensToApproval",
			in:   ModeInput{Tier: "R1", RequestRisk: "bogus"},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceRequest},
		},
		{
			name: "RequireApprovalTightensAllow",
			in:   ModeInput{AutomationOverride: "allow", Tier: "R1", RequireApproval: true},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceRequest},
		},
		{
			name: "RequireApprovalKeepsDeny",
			in:   ModeInput{OrgDefault: "deny", RequireApproval: true},
			want: Resolution{Mode: ModeDeny, Source: SourceOrgDefault},
		},
		{
			name: "RequireApprovalAlreadyRequired",
			in:   ModeInput{Tier: "R2", RequireApproval: true},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceInferredDefault},
		},
		{
			name: "RequestRiskAndRequireApprovalTakeStricter",
			in:   ModeInput{Tier: "R0", RequestRisk: "R4", RequireApproval: true},
			want: Resolution{Mode: ModeRequireApproval, Source: SourceRequest},
		},
		{
			name: "UnknownStoredModeStaysDeniedWithReason",
			in:   ModeInput{AutomationOverride: "maybe", RequestRisk: "high", RequireApproval: true},
			want: Resolution{Mode: ModeDeny, Source: SourceAutomationOverride, DeniedReason: "unknown_mode:maybe"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, Resolve(tt.in))
		})
	}
}

func TestResolve_NeverLoosens(t *testing.T) {
	t.Parallel()

	stored := []string{"", "allow", "deny", "require_approval", "bogus"}
	risks := []string{"", "read", "write", "danger", "low", "medium", "high", "R0", "R1", "R2", "R3", "R4", "nonsense"}
	for _, override := range stored {
		for _, org := range stored {
			for _, risk := range risks {
				base := Resolve(ModeInput{AutomationOverride: override, OrgDefault: org, Tier: risk})
				for _, requestRisk := range risks {
					for _, requireApproval := range []bool{false, true} {
						got := Resolve(ModeInput{
							AutomationOverride: override,
							OrgDefault:         org,
							Tier:               risk,
							RequestRisk:        requestRisk,
							RequireApproval:    requireApproval,
						})
						require.Equal(t, got.Mode, Stricter(base.Mode, got.Mode), "%+v loosened by request", base)
						if got.Mode == base.Mode {
							require.Equal(t, base, got)
						} else {
							require.Equal(t, SourceRequest, got.Source)
						}
					}
				}
			}
		}
	}
}

func TestInferMode(t *testing.T) {
	t.Parallel()

	tests := map[string]Mode{
		"read":    ModeAllow,
		"R0":      ModeAllow,
		"R1":      ModeAllow,
		"r1":      ModeAllow,
		"low":     ModeAllow,
		"READ":    ModeAllow,
		"write":   ModeRequireApproval,
		"R2":      ModeRequireApproval,
		"medium":  ModeRequireApproval,
		"danger":  ModeRequireApproval,
		"R3":      ModeRequireApproval,
		"R4":      ModeRequireApproval,
		"high":    ModeRequireApproval,
		"":        ModeRequireApproval,
		"R5":      ModeRequireApproval,
		"unknown": ModeRequireApproval,
		" read":   ModeRequireApproval,
	}
	for risk, want := range tests {
		require.Equal(t, want, InferMode(risk), "risk %q", risk)
	}
}

func TestValidRisk(t *testing.T) {
	t.Parallel()

	for _, s := range []string{"read", "write", "danger", "low", "medium", "high", "R0", "R1", "R2", "R3", "R4", "r3", "High"} {
		require.True(t, ValidRisk(s), s)
	}
	for _, s := range []string{"", "R5", "critical", " low", "none"} {
		require.False(t, ValidRisk(s), s)
	}
}

func TestStricter(t *testing.T) {
	t.Parallel()

	tests := []struct {
		a, b, want Mode
	}{
		{ModeAllow, ModeAllow, ModeAllow},
		{ModeAllow, ModeRequireApproval, ModeRequireApproval},
		{ModeRequireApproval, ModeAllow, ModeRequireApproval},
		{ModeAllow, ModeDeny, ModeDeny},
		{ModeDeny, ModeAllow, ModeDeny},
		{ModeRequireApproval, ModeDeny, ModeDeny},
		{ModeDeny, ModeRequireApproval, ModeDeny},
		{ModeDeny, ModeDeny, ModeDeny},
		{Mode("bogus"), ModeAllow, ModeDeny},
		{ModeAllow, Mode(""), ModeDeny},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, Stricter(tt.a, tt.b), "Stricter(%q, %q)", tt.a, tt.b)
	}
}

func TestApplyDriftGuard(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      Resolution
		drifted bool
		want    Resolution
	}{
		{
			name:    "DriftedAllowRequiresApproval",
			in:      Resolution{Mode: ModeAllow, Source: SourceOrgDefault},
			drifted: true,
			want:    Resolution{Mode: ModeRequireApproval, Source: SourceDriftGuard},
		},
		{
			name:    "DriftedRequireApprovalUnchanged",
			in:      Resolution{Mode: ModeRequireApproval, Source: SourceAutomationOverride},
			drifted: true,
			want:    Resolution{Mode: ModeRequireApproval, Source: SourceAutomationOverride},
		},
		{
			name:    "DriftedDenyStaysDeny",
			in:      Resolution{Mode: ModeDeny, Source: SourceOrgDefault},
			drifted: true,
			want:    Resolution{Mode: ModeDeny, Source: SourceOrgDefault},
		},
		{
			name:    "DriftedUnknownModeDenyKeepsReason",
			in:      Resolution{Mode: ModeDeny, Source: SourceOrgDefault, DeniedReason: "unknown_mode:x"},
			drifted: true,
			want:    Resolution{Mode: ModeDeny, Source: SourceOrgDefault, DeniedReason: "unknown_mode:x"},
		},
		{
			name: "NotDriftedAllowUnchanged",
			in:   Resolution{Mode: ModeAllow, Source: SourceInferredDefault},
			want: Resolution{Mode: ModeAllow, Source: SourceInferredDefault},
		},
		{
			name: "NotDriftedDenyUnchanged",
			in:   Resolution{Mode: ModeDeny, Source: SourceRequest},
			want: Resolution{Mode: ModeDeny, Source: SourceRequest},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, ApplyDriftGuard(tt.in, tt.drifted))
		})
	}

	t.Run("NeverUpgrades", func(t *testing.T) {
		t.Parallel()
		for _, mode := range []Mode{ModeAllow, ModeRequireApproval, ModeDeny} {
			for _, drifted := range []bool{false, true} {
				got := ApplyDriftGuard(Resolution{Mode: mode, Source: SourceOrgDefault}, drifted)
				require.Equal(t, got.Mode, Stricter(mode, got.Mode))
			}
		}
	})
}
