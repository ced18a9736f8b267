package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/database/databases"
	"github.com/outboxd/outboxd/executors/mcp/connectors"
	"github.com/outboxd/outboxd/internal/api"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
)

// countingConnectors and countingDatabases hold one record each, of
// source, and count their reads; the embedded interfaces panic on any
// method a test does not expect.
type countingConnectors struct {
	api.Connectors
	source        string
	gets, changes int
}

func (f *countingConnectors) Get(_ context.Context, _, id string) (connectors.View, error) {
	f.gets++
	if id != "c-1" {
		return connectors.View{}, errs.Errorf(errs.NotFound, "connector not found: %s", id)
	}
	return connectors.View{ID: uuid.MustParse("00000000-0000-0000-0000-000000000001"), SourceID: f.source}, nil
}

func (f *countingConnectors) Update(context.Context, string, string, string, *connectors.Input) (connectors.View, []uuid.UUID, error) {
	f.changes++
	return connectors.View{ID: uuid.MustParse("00000000-0000-0000-0000-000000000001"), SourceID: f.source}, nil, nil
}

func (f *countingConnectors) Delete(context.Context, string, string) error {
	f.changes++
	return nil
}

type countingDatabases struct {
	api.Databases
	source        string
	gets, changes int
}

func (f *countingDatabases) Get(_ context.Context, _, id string) (databases.View, error) {
	f.gets++
	if id != "d-1" {
		return databases.View{}, errs.Errorf(errs.NotFound, "database not found: %s", id)
	}
	return databases.View{ID: uuid.MustParse("00000000-0000-0000-0000-000000000002"), SourceID: f.source}, nil
}

func (f *countingDatabases) Update(context.Context, string, string, string, *databases.Input) (databases.View, []uuid.UUID, error) {
	f.changes++
	return databases.View{ID: uuid.MustParse("00000000-0000-0000-0000-000000000002"), SourceID: f.source}, nil, nil
}

func (f *countingDatabases) Delete(context.Context, string, string) error {
	f.changes++
	return nil
}

type recordingAudit struct {
	api.Audit
	changes []*audit.Change
}

func (f *recordingAudit) Record(_ context.Context, c *audit.Change) error {
	f.changes = append(f.changes, c)
	return nil
}

// TestSourcesClaim_ChangeReadsOnce: with the audit trail on, a change of a
// connector or database through a token with a sources claim reads the
// record once before the change, for both the claim's check and the audit
// entry's before (and the change itself), as a token without the claim
// does; one of a source outside the claim is 403 source_not_allowed and
// an unknown one 404, neither changed nor recorded.
func TestSourcesClaim_ChangeReadsOnce(t *testing.T) {
	conns := &countingConnectors{source: "mcp:mine"}
	dbs := &countingDatabases{source: "db:mine"}
	trail := &recordingAudit{}
	h, owner := fakeServer(t, &api.Deps{Connectors: conns, Databases: dbs, Audit: trail})
	mint := func(sources ...string) string {
		token, err := auth.Mint("a-test-secret-of-enough-length-0123456789", auth.Claims{Org: "org-1", Kind: auth.KindUser, Role: auth.RoleAdmin,
			Sources: auth.OnlySources(sources...), RegisteredClaims: jwt.RegisteredClaims{Subject: "bob"}}, time.Hour)
		require.NoError(t, err)
		return token
	}
	mine, others := mint("mcp:mine", "db:mine"), mint("github")
	for _, tc := range []struct{ method, path, body string }{
		{"PATCH", "/v1/connectors/c-1", `{"enabled": false}`},
		{"DELETE", "/v1/connectors/c-1", ""},
		{"PATCH", "/v1/databases/d-1", `{"max_rows": 7}`},
		{"DELETE", "/v1/databases/d-1", ""},
	} {
		t.Run(tc.method+tc.path, func(t *testing.T) {
			for _, token := range []string{owner, mine} {
				conns.gets, dbs.gets, conns.changes, dbs.changes, trail.changes = 0, 0, 0, 0, nil
				status, out := fakeCall(t, h, token, tc.method, tc.path, tc.body)
				require.Contains(t, []int{http.StatusOK, http.StatusNoContent}, status, out)
				require.Equal(t, 1, conns.gets+dbs.gets, "one read before the change")
				require.Equal(t, 1, conns.changes+dbs.changes)
				require.Len(t, trail.changes, 1)
				require.NotNil(t, trail.changes[0].Before)
			}

			conns.changes, dbs.changes, trail.changes = 0, 0, nil
			status, out := fakeCall(t, h, others, tc.method, tc.path, tc.body)
			require.Equal(t, http.StatusForbidden, status, out)
			require.Equal(t, "source_not_allowed", errorCode(out))
			status, out = fakeCall(t, h, mine, tc.method, tc.path+"x", tc.body)
			require.Equal(t, http.StatusNotFound, status, out)
			require.Equal(t, "not_found", errorCode(out))
			require.Zero(t, conns.changes+dbs.changes)
			require.Empty(t, trail.changes)
		})
	}
}
