package sentry

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

// Action ids, as they appear in the catalog and in mode keys.
const (
	ActionListIssues      = "list_issues"
	ActionGetIssue        = "get_issue"
	ActionListIssueEvents = "list_issue_events"
	ActionGetEvent        = "get_event"
	ActionUpdateIssue     = "update_issue"
)

// DefaultIssueQuery is the search list_issues runs when params carry no
// query, matching the default of Sentry's own issue stream.
const DefaultIssueQuery = "is:unresolved"

var (
	//go:embed list_issues.schema.json
	listIssuesSchema string
	//go:embed get_issue.schema.json
	getIssueSchema string
	//go:embed list_issue_events.schema.json
	listIssueEventsSchema string
	//go:embed get_event.schema.json
	getEventSchema string
	//go:embed update_issue.schema.json
	updateIssueSchema string
)

const (
	listIssuesDescription = "List the issues (grouped errors) of one Sentry project, most recently seen first. " +
		"Set `organization_slug` and `project_slug`; narrow the list with `query` in Sentry's issue search " +
		"syntax (default \"is:unresolved\"). The result is {\"issues\": [...], \"next_cursor\": ...}; each " +
		"issue has id (the issue_id for the other Sentry actions), shortId, title, culprit, status, level, " +
		"count, userCount, firstSeen, lastSeen, project and permalink. When next_cursor is not null, call " +
		"again with `cursor` set to it for the next page."
	getIssueDescription = "Get one Sentry issue by its id: title, culprit, status, level, event and user " +
		"counts, first and last seen, assignee, project and permalink. For stack traces, use " +
		"list_issue_events and get_event."
	listIssueEventsDescription = "List the most recent events (individual occurrences) of a Sentry issue, " +
		"each with its eventID, title, message, dateCreated, tags, user and platform. Pass an eventID to " +
		"get_event for the full event with its stack trace."
	getEventDescription = "Get one event of a Sentry issue in full: exception and stack trace, breadcrumbs, " +
		"request, tags, contexts, user and release. Set `event_id` to an eventID from list_issue_events, " +
		"or to \"latest\" or \"oldest\"."
	updateIssueDescription = "Change the status or the assignee of a Sentry issue. Set `status` to resolved, " +
		"unresolved, ignored (archived) or resolvedInNextRelease, and/or `assignedTo` to \"user:<id>\", " +
		"\"team:<id>\", or an organization member's username or email; an empty `assignedTo` removes the " +
		"assignee. At least one of the two is required. The change is visible to the whole team and may " +
		"notify the issue's subscribers; repeating it is harmless. The provider reference is the issue id."
)

// actions are Sentry's actions, each with its handler.
var actions = []executors.Action{
	executors.NewAction(executors.Definition{ID: ActionListIssues, Description: listIssuesDescription, Tier: executors.TierR1, Params: json.RawMessage(listIssuesSchema), Delivery: executors.DeliveryExactlyOnce}, (*client).listIssues),
	executors.NewAction(executors.Definition{ID: ActionGetIssue, Description: getIssueDescription, Tier: executors.TierR1, Params: json.RawMessage(getIssueSchema), Delivery: executors.DeliveryExactlyOnce}, (*client).getIssue),
	executors.NewAction(executors.Definition{ID: ActionListIssueEvents, Description: listIssueEventsDescription, Tier: executors.TierR1, Params: json.RawMessage(listIssueEventsSchema), Delivery: executors.DeliveryExactlyOnce}, (*client).listIssueEvents),
	executors.NewAction(executors.Definition{ID: ActionGetEvent, Description: getEventDescription, Tier: executors.TierR1, Params: json.RawMessage(getEventSchema), Delivery: executors.DeliveryExactlyOnce}, (*client).getEvent),
	executors.WithPreview(executors.NewAction(executors.Definition{ID: ActionUpdateIssue, Description: updateIssueDescription, Tier: executors.TierR2, Params: json.RawMessage(updateIssueSchema), Delivery: executors.DeliveryExactlyOnce}, (*client).updateIssue), (*client).previewUpdateIssue),
}

// ListIssuesParams are the params of list_issues.
type ListIssuesParams struct {
	// OrganizationSlug is the slug of the organization owning the project.
	OrganizationSlug string `json:"organization_slug"`
	// ProjectSlug is the slug of the project whose issues are listed.
	ProjectSlug string `json:"project_slug"`
	// Query is a Sentry issue search. Nil means DefaultIssueQuery; an empty
	// string lists issues in every status.
	Query *string `json:"query,omitempty"`
	// Cursor is the next_cursor of a previous page.
	Cursor string `json:"cursor,omitempty"`
}

func (p *ListIssuesParams) Check() error {
	return checkSegments(
		segment{"organization_slug", p.OrganizationSlug},
		segment{"project_slug", p.ProjectSlug},
	)
}

// IssueParams are the params of get_issue and list_issue_events.
type IssueParams struct {
	// IssueID is Sentry's numeric issue id, as a string.
	IssueID string `json:"issue_id"`
	// OrganizationSlug, when set, selects the organization-scoped endpoint.
	OrganizationSlug string `json:"organization_slug,omitempty"`
}

func (p *IssueParams) Check() error {
	return checkSegments(segment{"issue_id", p.IssueID}, optionalSegment("organization_slug", p.OrganizationSlug))
}

// GetEventParams are the params of get_event.
type GetEventParams struct {
	// IssueID is Sentry's numeric issue id, as a string.
	IssueID string `json:"issue_id"`
	// EventID is an event's eventID, or "latest" or "oldest".
	EventID string `json:"event_id"`
	// OrganizationSlug, when set, selects the organization-scoped endpoint.
	OrganizationSlug string `json:"organization_slug,omitempty"`
}

func (p *GetEventParams) Check() error {
	return checkSegments(
		segment{"issue_id", p.IssueID},
		segment{"event_id", p.EventID},
		optionalSegment("organization_slug", p.OrganizationSlug),
	)
}

// UpdateIssueParams are the params of update_issue.
type UpdateIssueParams struct {
	// IssueID is Sentry's numeric issue id, as a string.
	IssueID string `json:"issue_id"`
	// OrganizationSlug, when set, selects the organization-scoped endpoint.
	OrganizationSlug string `json:"organization_slug,omitempty"`
	// Status is the new status, one of the values in issueStatuses.
	Status *string `json:"status,omitempty"`
	// AssignedTo is the new assignee; an empty string unassigns.
	AssignedTo *string `json:"assignedTo,omitempty"`
}

// issueStatuses are the statuses update_issue may set.
var issueStatuses = map[string]bool{
	"resolved":              true,
	"unresolved":            true,
	"ignored":               true,
	"resolvedInNextRelease": true,
}

func (p *UpdateIssueParams) Check() error {
	if err := checkSegments(segment{"issue_id", p.IssueID}, optionalSegment("organization_slug", p.OrganizationSlug)); err != nil {
		return err
	}
	switch {
	case p.Status == nil && p.AssignedTo == nil:
		return errors.New("set status, assignedTo or both")
	case p.Status != nil && !issueStatuses[*p.Status]:
		return fmt.Errorf("status %q is not one of resolved, unresolved, ignored, resolvedInNextRelease", *p.Status)
	}
	return nil
}

// updateIssueBody is what update_issue sends: only the fields to change.
type updateIssueBody struct {
	Status     *string `json:"status,omitempty"`
	AssignedTo *string `json:"assignedTo,omitempty"`
}

// listIssuesData is list_issues' result: Sentry's page of issues and the
// cursor of the next page, null on the last one.
type listIssuesData struct {
	Issues     json.RawMessage `json:"issues"`
	NextCursor *string         `json:"next_cursor"`
}

func (s *client) listIssues(ctx context.Context, p *ListIssuesParams, ec executors.ExecContext) (executors.Result, error) {
	query := url.Values{"query": {DefaultIssueQuery}}
	if p.Query != nil {
		query.Set("query", *p.Query)
	}
	if p.Cursor != "" {
		query.Set("cursor", p.Cursor)
	}

	ans, err := s.api.Do(ctx, ec, &httpsource.Request{
		Method:   http.MethodGet,
		Segments: []string{"projects", p.OrganizationSlug, p.ProjectSlug, "issues"},
		Query:    query,
		Subject:  fmt.Sprintf("project %q in organization %q", p.ProjectSlug, p.OrganizationSlug),
	})
	if err != nil {
		return executors.Result{}, err
	}
	if !isJSONArray(ans.Body) {
		return executors.Result{}, &executors.Error{
			Code:      "invalid_response",
			Message:   "Sentry answered list_issues with something other than a list of issues",
			Retryable: true,
		}
	}
	data, err := json.Marshal(listIssuesData{Issues: ans.Body, NextCursor: nextCursor(ans.Header)})
	if err != nil {
		return executors.Result{}, fmt.Errorf("sentry: encoding list_issues result: %w", err)
	}
	return executors.Result{Data: data}, nil
}

func (s *client) getIssue(ctx context.Context, p *IssueParams, ec executors.ExecContext) (executors.Result, error) {
	ans, err := s.api.Do(ctx, ec, &httpsource.Request{
		Method:   http.MethodGet,
		Segments: issuePath(p.OrganizationSlug, p.IssueID),
		Subject:  issueSubject(p.OrganizationSlug, p.IssueID),
	})
	if err != nil {
		return executors.Result{}, err
	}
	return executors.Result{Data: ans.Body}, nil
}

func (s *client) listIssueEvents(ctx context.Context, p *IssueParams, ec executors.ExecContext) (executors.Result, error) {
	ans, err := s.api.Do(ctx, ec, &httpsource.Request{
		Method:   http.MethodGet,
		Segments: issuePath(p.OrganizationSlug, p.IssueID, "events"),
		Subject:  issueSubject(p.OrganizationSlug, p.IssueID),
	})
	if err != nil {
		return executors.Result{}, err
	}
	return executors.Result{Data: ans.Body}, nil
}

func (s *client) getEvent(ctx context.Context, p *GetEventParams, ec executors.ExecContext) (executors.Result, error) {
	ans, err := s.api.Do(ctx, ec, &httpsource.Request{
		Method:   http.MethodGet,
		Segments: issuePath(p.OrganizationSlug, p.IssueID, "events", p.EventID),
		Subject:  fmt.Sprintf("event %q of %s", p.EventID, issueSubject(p.OrganizationSlug, p.IssueID)),
	})
	if err != nil {
		return executors.Result{}, err
	}
	return executors.Result{Data: ans.Body}, nil
}

func (s *client) updateIssue(ctx context.Context, p *UpdateIssueParams, ec executors.ExecContext) (executors.Result, error) {
	body, err := json.Marshal(updateIssueBody{Status: p.Status, AssignedTo: p.AssignedTo})
	if err != nil {
		return executors.Result{}, fmt.Errorf("sentry: encoding update_issue body: %w", err)
	}
	ans, err := s.api.Do(ctx, ec, &httpsource.Request{
		Method:     http.MethodPut,
		Segments:   issuePath(p.OrganizationSlug, p.IssueID),
		Body:       body,
		Subject:    issueSubject(p.OrganizationSlug, p.IssueID),
		AllowEmpty: true,
	})
	if err != nil {
		return executors.Result{}, err
	}
	return executors.Result{Data: ans.Body, ProviderRef: p.IssueID}, nil
}

// issuePath is the path of an issue, or of something under it. Sentry has
// both a legacy /issues/{id}/ and an organization-scoped form; the scoped
// one is used when the caller names the organization.
func issuePath(org, issueID string, rest ...string) []string {
	path := []string{"issues", issueID}
	if org != "" {
		path = []string{"organizations", org, "issues", issueID}
	}
	return append(path, rest...)
}

// issueSubject names an issue in error messages.
func issueSubject(org, issueID string) string {
	if org != "" {
		return fmt.Sprintf("issue %q in organization %q", issueID, org)
	}
	return fmt.Sprintf("issue %q", issueID)
}

// segment is one path segment taken from params, with the param's name.
type segment struct {
	name, value string
}

// optionalSegment is a segment that may be absent, which an empty value
// stands for.
func optionalSegment(name, value string) segment {
	if value == "" {
		return segment{}
	}
	return segment{name, value}
}

// checkSegments rejects path segments that are empty, made only of dots,
// or holding a "/", a backslash or a "%", as the schemas' pattern does: a
// server or proxy resolves "." and ".." (which escaping leaves unchanged)
// to another endpoint, and Sentry's Django routes the path it decoded,
// where an escaped "/" ("1%2Fevents") separates segments again, as a
// backslash does for some proxies and a "%" decoded twice may. No Sentry
// id or slug has any of them.
func checkSegments(segments ...segment) error {
	for _, s := range segments {
		switch {
		case s.name == "":
		case s.value == "":
			return fmt.Errorf("%s is required", s.name)
		case strings.Trim(s.value, ".") == "":
			return fmt.Errorf("%s %q is not a valid id or slug: it is only dots", s.name, s.value)
		case strings.ContainsAny(s.value, `/\%`):
			return fmt.Errorf("%s %q is not a valid id or slug: it holds a /, a \\ or a %%", s.name, s.value)
		}
	}
	return nil
}
