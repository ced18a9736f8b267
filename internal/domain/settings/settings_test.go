package settings_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/demo"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/settings"
)

// Invalid input is refused before the database is touched: these run on
// a service without a pool.
func newService(t *testing.T) *settings.Service {
	t.Helper()
	limiter, err := flow.New(nil, &flow.Config{Buckets: []flow.BucketConfig{{Name: "slack", Scope: flow.ScopeGlobal, Rate: 1, Burst: 1}}})
	require.NoError(t, err)
	return settings.New(&settings.Deps{Providers: executors.NewRegistry(demo.New(&demo.Config{})), Flow: limiter})
}

// fields returns the fields of err, which must be a validation error.
func fields(t *testing.T, err error) []string {
	t.Helper()
	var ve *errs.ValidationError
	require.True(t, errors.As(err, &ve), "want a validation error, got %v", err)
	var out []string
	for _, f := range ve.Fields {
		out = append(out, f.Field)
	}
	return out
}

func TestPutModes_RefusesBadKeysAndModes(t *testing.T) {
	svc := newService(t)
	_, err := svc.PutModes(context.Background(), "org-1", "", "alice", map[string]string{
		"slack":              "allow",
		"slack:send_message": "sometimes",
	}, "")
	require.ElementsMatch(t, []string{"slack", "slack:send_message"}, fields(t, err))
}

func TestPutQuietHours_RefusesEachBadField(t *testing.T) {
	svc := newService(t)
	_, err := svc.PutQuietHours(context.Background(), "org-1", "alice", []settings.QuietHoursWindow{
		{TimeZone: "Mars/Olympus", Start: "25:00", End: "07:00"},
		{Bucket: "nope", TimeZone: "Europe/Paris", Start: "22:00", End: "7"},
		{Bucket: "slack", TimeZone: "Europe/Paris", Start: "22:00", End: "07:00"},
		{Bucket: "slack", TimeZone: "Europe/Paris", Start: "22:00", End: "07:00"},
	}, "")
	require.ElementsMatch(t, []string{"0/time_zone", "0/start", "1/end", "1/bucket", "3/bucket"}, fields(t, err))

	// "Local" loads, as each worker host's own zone: not a zone to keep.
	_, err = svc.PutQuietHours(context.Background(), "org-1", "alice", []settings.QuietHoursWindow{
		{TimeZone: "Local", Start: "22:00", End: "07:00"},
	}, "")
	require.Equal(t, []string{"0/time_zone"}, fields(t, err))
}

func TestPutDoNotContact_RefusesBadPatterns(t *testing.T) {
	svc := newService(t)
	_, err := svc.PutDoNotContact(context.Background(), "org-1", "alice", []string{"#general", "", "[unclosed"}, "")
	require.ElementsMatch(t, []string{"1", "2"}, fields(t, err))
}

func TestPutCredential_RefusesBadInput(t *testing.T) {
	svc := newService(t)
	ctx := context.Background()
	put := func(p settings.PutCredentialParams) error {
		p.OrganizationID, p.By = "org-1", "alice"
		_, _, err := svc.PutCredential(ctx, &p)
		return err
	}
	require.ErrorIs(t, put(settings.PutCredentialParams{Integration: "nosuch", Token: "t"}), errs.NotFound)
	require.Equal(t, []string{"token"}, fields(t, put(settings.PutCredentialParams{Integration: demo.SourceID, Token: "  "})))
	require.Equal(t, []string{"user_id"}, fields(t, put(settings.PutCredentialParams{Integration: demo.SourceID, Token: "t", UserID: string(make([]byte, 256))})))
	require.Equal(t, []string{"token_kind"}, fields(t, put(settings.PutCredentialParams{Integration: demo.SourceID, Token: "t", TokenKind: "password"})))
}

// A replacement through a sources claim naming another source's override
// is refused before the database is touched, even among valid keys.
func TestPutModesOf_RefusesSourcesOutsideTheClaim(t *testing.T) {
	svc := newService(t)
	_, err := svc.PutModesOf(context.Background(), "org-1", "", "alice", auth.OnlySources("github"), map[string]string{
		"github:create_issue": "allow",
		"slack:send_message":  "allow",
	}, "")
	require.ErrorIs(t, err, errs.SourceNotAllowed)
	require.ErrorContains(t, err, "slack")
}
