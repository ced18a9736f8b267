package executors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
)

// The kinds of Preview.
const (
	// PreviewMessage is a message as its recipient will see it.
	PreviewMessage = "message"
	// PreviewIssue is an issue as it will be created.
	PreviewIssue = "issue"
	// PreviewDiff is an update: the fields it changes, before → after.
	PreviewDiff = "diff"
	// PreviewQuery is a query with the database's estimate of its plan.
	PreviewQuery = "query"
	// PreviewToolArgs is a tool's arguments with their schema's
	// descriptions.
	PreviewToolArgs = "tool_args"
)

// Preview is what an action will do, rendered before it is approved: a
// small structured value that the console and the Slack approval message
// both draw. Fields that do not apply to the kind are empty.
type Preview struct {
	// Kind is one of PreviewMessage, PreviewIssue, PreviewDiff,
	// PreviewQuery, PreviewToolArgs.
	Kind string `json:"kind"`
	// Title is a one-line heading: "Message to #general", an issue's
	// title, "Update ENG-12".
	Title string `json:"title"`
	// Text is the body: a message's text with its mentions resolved, an
	// issue's description, a query's SQL.
	Text string `json:"text,omitempty"`
	// Fields are named values shown under the title (channel, labels,
	// assignee; a tool's arguments with their descriptions).
	Fields []PreviewField `json:"fields,omitempty"`
	// Changes are an update's changed fields, as they are and as they
	// will be.
	Changes []PreviewChange `json:"changes,omitempty"`
	// Plan is a query's estimate; nil for other kinds.
	Plan *QueryPlan `json:"plan,omitempty"`
	// Notes say what the rendering could not resolve and why (a scope
	// the credential lacks), so a reader knows an id was left as is.
	Notes []string `json:"notes,omitempty"`
}

// PreviewField is one named value of a Preview.
type PreviewField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Description is what the value means (a tool argument's schema
	// description).
	Description string `json:"description,omitempty"`
}

// PreviewChange is one field an update changes.
type PreviewChange struct {
	Field  string `json:"field"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// QueryPlan is the database's estimate of a query (EXPLAIN, never run).
type QueryPlan struct {
	// Node is the top plan node's type, e.g. "Seq Scan".
	Node string `json:"node"`
	// Rows is the estimated number of rows.
	Rows float64 `json:"rows"`
	// StartupCost and TotalCost are the planner's cost units.
	StartupCost float64 `json:"startup_cost"`
	TotalCost   float64 `json:"total_cost"`
	// Relations are the tables the plan reads.
	Relations []string `json:"relations,omitempty"`
}

// Previewer is implemented by sources that render their actions before
// they run. Preview makes only reads; it returns ErrNoPreview for an
// action that has no rendering.
type Previewer interface {
	Preview(ctx context.Context, actionID string, params json.RawMessage, ec ExecContext) (*Preview, error)
}

// ErrNoPreview is the error of an action that renders no preview.
var ErrNoPreview = errors.New("the action renders no preview")

// WithPreview returns a with a preview handler: render gets the same
// strictly decoded params as the action's handler, and reads what it
// needs from the provider with ec's credential.
func WithPreview[C, P any](a Action, render func(c C, ctx context.Context, p *P, ec ExecContext) (*Preview, error)) Action {
	id := a.Definition.ID
	a.preview = func(ctx context.Context, conn any, params json.RawMessage, ec ExecContext) (*Preview, error) {
		c, ok := conn.(C)
		if !ok {
			return nil, fmt.Errorf("executors: action %s renders on a %T, not on a %T", id, *new(C), conn)
		}
		var p P
		if err := DecodeParams(id, params, &p); err != nil {
			return nil, err
		}
		return render(c, ctx, &p, ec)
	}
	return a
}

// Preview renders one action; ErrNoPreview when it has no preview
// handler. Like Execute, no failure's text contains ec.Token.
func (s *providerSource) Preview(ctx context.Context, actionID string, params json.RawMessage, ec ExecContext) (*Preview, error) {
	a, ok := s.actions[actionID]
	if !ok {
		return nil, UnknownAction(s.p.ID, actionID)
	}
	if a.preview == nil {
		return nil, ErrNoPreview
	}
	p, err := a.preview(ctx, s.conn, params, ec)
	if err != nil {
		return nil, Scrub(err, ec.Token, url.PathEscape(ec.Token), url.QueryEscape(ec.Token))
	}
	return p, nil
}
