package databases

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/orgsource"
)

// URLReader reads a registered database's sealed URL as the caller's
// organization (the credential store's CallerToken).
type URLReader interface {
	CallerToken(ctx context.Context, req credential.Request, refresh bool) (credential.Token, error)
}

// TestResult is what testing a database found: whether list_tables ran,
// how many tables and views its user may read, and the error otherwise
// (never the URL).
type TestResult struct {
	Reachable  bool
	TableCount int
	Code       string
	Error      string
}

// Test runs list_tables on one of org's databases now, on a new
// connection, in the same read-only transaction, guards and timeout as an
// agent's call, and saves nothing.
func (s *Service) Test(ctx context.Context, org, id string) (TestResult, error) {
	uid, err := parseID(id)
	if err != nil {
		return TestResult{}, err
	}
	row, ok, err := s.store.Get(ctx, org, uid)
	if err != nil {
		return TestResult{}, err
	}
	if !ok {
		return TestResult{}, orgsource.NotFound("database", id)
	}
	if s.urls == nil {
		return TestResult{}, errors.New("testing databases: no URL reader")
	}
	tok, err := s.urls.CallerToken(ctx, credential.Request{Org: org, Integration: database.SourceID(uid)}, false)
	if err != nil {
		return TestResult{}, fmt.Errorf("reading the database's URL: %w", err)
	}
	// A new connection, as a query's: one the pool kept would hide what
	// changed since it was opened (the role's privileges, its password).
	s.dropPool(uid)
	src := s.source(&row).Source
	res, err := src.Execute(ctx, database.ActionListTables, json.RawMessage(`{}`), executors.ExecContext{Token: tok.Value, OrganizationID: org})
	if err != nil {
		var ee *executors.Error
		if errors.As(err, &ee) {
			return TestResult{Code: ee.Code, Error: ee.Message}, nil
		}
		return TestResult{Code: "unreachable", Error: "the database could not be reached"}, nil
	}
	var tables database.TablesResult
	_ = json.Unmarshal(res.Data, &tables)
	return TestResult{Reachable: true, TableCount: len(tables.Tables)}, nil
}
