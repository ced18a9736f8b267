package api

import (
	"encoding/json"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/policy"
)

// listingView is the API shape of the catalog a caller may use.
type listingView struct {
	Actions []availableActionView `json:"actions"`
	Sources []sourceStatusView    `json:"sources"`
}

// availableActionView is one action of the catalog; it converts from
// catalog.AvailableAction, so the two keep the same fields.
type availableActionView struct {
	Source      string             `json:"source"`
	Action      string             `json:"action"`
	Description string             `json:"description"`
	RiskTier    policy.Tier        `json:"risk_tier"`
	RiskLevel   string             `json:"risk_level"`
	Mode        policy.Mode        `json:"mode"`
	ModeSource  policy.ModeSource  `json:"mode_source"`
	Params      json.RawMessage    `json:"params"`
	Output      json.RawMessage    `json:"output,omitempty"`
	Delivery    executors.Delivery `json:"delivery"`
	Hash        string             `json:"definition_hash"`
	Drifted     bool               `json:"drifted"`
	Disabled    bool               `json:"disabled,omitempty"`
}

// sourceStatusView is one source of the catalog: ok, or why its actions
// are missing.
type sourceStatusView struct {
	Source string `json:"source"`
	Name   string `json:"name,omitempty"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

func viewListing(l *catalog.Listing) listingView {
	return listingView{
		Actions: viewEach(l.Actions, func(a catalog.AvailableAction) availableActionView { return availableActionView(a) }),
		Sources: viewEach(l.Sources, func(s catalog.SourceStatus) sourceStatusView { return sourceStatusView(s) }),
	}
}
