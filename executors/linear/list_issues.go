package linear

import (
	"context"
	_ "embed"
	"encoding/json"

	"github.com/outboxd/outboxd/executors"
)

//go:embed list_issues.schema.json
var listIssuesSchema string

const listIssuesDescription = "List Linear issues the token can see, one page at a time. Set `teamId` " +
	"and/or `projectId` to only list the issues of that team or project. Each issue comes with its id, " +
	"identifier (such as ENG-123), title, workflow state, priority (0 none, 1 urgent, 2 high, 3 medium, " +
	"4 low), assignee, url and timestamps. A page holds `first` issues (default 25, at most 50); when " +
	"`page_info.has_next_page` is true, call again with `after` set to `page_info.end_cursor` for the " +
	"next page. Read-only. Use get_issue for an issue's description, team and labels."

const (
	// defaultListFirst is the page size when first is not set.
	defaultListFirst = 25
	// maxListFirst is the largest page list_issues asks Linear for, whatever
	// the params say.
	maxListFirst = 50
)

// issueSummaryFields is the selection of each issue in a list_issues page.
const issueSummaryFields = `id identifier title priority url createdAt updatedAt
      state { name }
      assignee { id name }`

const listIssuesQuery = `query ListIssues($first: Int!, $after: String, $filter: IssueFilter) {
  issues(first: $first, after: $after, filter: $filter) {
    nodes {
      ` + issueSummaryFields + `
    }
    pageInfo { hasNextPage endCursor }
  }
}`

// ListIssuesParams are the params of list_issues.
type ListIssuesParams struct {
	// TeamID limits the list to one team.
	TeamID string `json:"teamId,omitempty"`
	// ProjectID limits the list to one project.
	ProjectID string `json:"projectId,omitempty"`
	// First is the page size, 1 to 50; nil means 25. Larger values are
	// capped at 50.
	First *int `json:"first,omitempty"`
	// After is the end cursor of the previous page.
	After string `json:"after,omitempty"`
}

// ListIssuesResult is the Data of a list_issues result.
type ListIssuesResult struct {
	// Issues are the issues of the page, as Linear returned them.
	Issues []json.RawMessage `json:"issues"`
	// PageInfo says whether and how to fetch the next page.
	PageInfo PageInfo `json:"page_info"`
}

// PageInfo is Linear's pageInfo in snake_case.
type PageInfo struct {
	// HasNextPage is true when another page follows.
	HasNextPage bool `json:"has_next_page"`
	// EndCursor is the value of after for the next page.
	EndCursor *string `json:"end_cursor"`
}

// listIssuesDefinition is list_issues's definition.
var listIssuesDefinition = executors.Definition{
	ID:          ActionListIssues,
	Description: listIssuesDescription,
	Tier:        executors.TierR1,
	Delivery:    executors.DeliveryExactlyOnce,
	Params:      json.RawMessage(listIssuesSchema),
}

func (s *client) listIssues(ctx context.Context, p *ListIssuesParams, ec executors.ExecContext) (executors.Result, error) {
	first := defaultListFirst
	if p.First != nil {
		if *p.First < 1 {
			return executors.Result{}, executors.InvalidParams(ActionListIssues, "first must be at least 1")
		}
		first = min(*p.First, maxListFirst)
	}

	variables := map[string]any{"first": first}
	if p.After != "" {
		variables["after"] = p.After
	}
	filter := map[string]any{}
	if p.TeamID != "" {
		filter["team"] = map[string]any{"id": map[string]any{"eq": p.TeamID}}
	}
	if p.ProjectID != "" {
		filter["project"] = map[string]any{"id": map[string]any{"eq": p.ProjectID}}
	}
	if len(filter) > 0 {
		variables["filter"] = filter
	}

	var data struct {
		Issues *struct {
			Nodes    []json.RawMessage `json:"nodes"`
			PageInfo struct {
				HasNextPage bool    `json:"hasNextPage"`
				EndCursor   *string `json:"endCursor"`
			} `json:"pageInfo"`
		} `json:"issues"`
	}
	op := operation{name: "ListIssues", query: listIssuesQuery, variables: variables}
	if err := s.do(ctx, ec, op, &data); err != nil {
		return executors.Result{}, err
	}
	if data.Issues == nil {
		return executors.Result{}, &executors.Error{
			Code:      "invalid_response",
			Message:   "Linear's answer to ListIssues has no issues connection",
			Retryable: true,
		}
	}

	out := ListIssuesResult{
		Issues: data.Issues.Nodes,
		PageInfo: PageInfo{
			HasNextPage: data.Issues.PageInfo.HasNextPage,
			EndCursor:   data.Issues.PageInfo.EndCursor,
		},
	}
	if out.Issues == nil {
		out.Issues = []json.RawMessage{}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return executors.Result{}, &executors.Error{
			Code:      "invalid_response",
			Message:   "Linear's answer to ListIssues could not be re-encoded: " + err.Error(),
			Retryable: true,
		}
	}
	return executors.Result{Data: raw}, nil
}
