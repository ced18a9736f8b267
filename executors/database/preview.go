package database

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/executors"
)

// Preview renders a query with the database's estimate of its plan:
// EXPLAIN (FORMAT JSON), never ANALYZE, so the statement is planned and
// not run, in the same read-only transaction with the same statement
// timeout as the query would be. list_tables and describe_table render no
// preview.
func (s *source) Preview(ctx context.Context, actionID string, params json.RawMessage, ec executors.ExecContext) (*executors.Preview, error) {
	if actionID != ActionQuery {
		if actionID == ActionListTables || actionID == ActionDescribeTable {
			return nil, executors.ErrNoPreview
		}
		return nil, &executors.Error{Code: CodeUnknownAction, Cause: executors.ErrUnknownAction,
			Message: fmt.Sprintf("a database has no action %q: use query, list_tables or describe_table", actionID)}
	}
	sc := newScrubber(ec.Token)
	var p struct {
		SQL    string            `json:"sql"`
		Params []json.RawMessage `json:"params"`
	}
	if err := decodeParams(params, &p); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.SQL) == "" {
		return nil, &executors.Error{Code: CodeInvalidParams, Message: "sql is empty"}
	}
	args, err := queryArgs(p.Params)
	if err != nil {
		return nil, err
	}
	pool, release, err := s.client.pools.acquire(s.db.ID, ec.Token)
	if err != nil {
		return nil, s.classify(ctx, err, sc)
	}
	defer release()
	out, err := s.inReadOnlyTx(ctx, pool, false, func(ctx context.Context, tx pgx.Tx) (any, error) {
		return explain(ctx, tx, p.SQL, args)
	})
	if err != nil {
		return nil, s.classify(ctx, err, sc)
	}
	plan := out.(*executors.QueryPlan)
	pv := &executors.Preview{Kind: executors.PreviewQuery, Title: "Query on " + s.db.Name, Text: p.SQL, Plan: plan}
	for i, a := range p.Params {
		pv.Fields = append(pv.Fields, executors.PreviewField{Name: fmt.Sprintf("$%d", i+1), Value: string(a)})
	}
	return pv, nil
}

// planNode is the part of a node of EXPLAIN (FORMAT JSON) a preview reads.
type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	Schema       string     `json:"Schema"`
	StartupCost  float64    `json:"Startup Cost"`
	TotalCost    float64    `json:"Total Cost"`
	PlanRows     float64    `json:"Plan Rows"`
	Plans        []planNode `json:"Plans"`
}

// explain plans sql with args and returns the top node's estimate and the
// relations the plan reads.
func explain(ctx context.Context, tx pgx.Tx, sql string, args [][]byte) (*executors.QueryPlan, error) {
	rr := tx.Conn().PgConn().ExecParams(ctx, "EXPLAIN (FORMAT JSON, VERBOSE) "+sql, args, nil, nil, nil)
	var raw []byte
	for rr.NextRow() {
		raw = append(raw, rr.Values()[0]...)
	}
	if _, err := rr.Close(); err != nil {
		return nil, err
	}
	var doc []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc) == 0 {
		return nil, &executors.Error{Code: CodeQueryError, Message: "the database's EXPLAIN answer is not a plan"}
	}
	top := doc[0].Plan
	plan := &executors.QueryPlan{Node: top.NodeType, Rows: top.PlanRows, StartupCost: top.StartupCost, TotalCost: top.TotalCost}
	var walk func(n *planNode)
	walk = func(n *planNode) {
		if n.RelationName != "" {
			name := n.RelationName
			if n.Schema != "" {
				name = n.Schema + "." + name
			}
			if !slices.Contains(plan.Relations, name) {
				plan.Relations = append(plan.Relations, name)
			}
		}
		for i := range n.Plans {
			walk(&n.Plans[i])
		}
	}
	walk(&top)
	return plan, nil
}
