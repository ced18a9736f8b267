package intent

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestStoredNumbers_AsJsonbStoresThem: each number is written as Postgres
// stores it in a jsonb column, which is where the worker reads the
// params it computes the intent of.
func TestStoredNumbers_AsJsonbStoresThem(t *testing.T) {
	pool := pgtest.Pool(t)
	for _, lit := range []string{
		"0", "-0", "-0.0", "1", "-1", "1.0", "1.50", "100", "0.001", "-0.5",
		"1e0", "1E0", "1e2", "1E+2", "1e-2", "1.5e1", "1.50e1", "1.5e-3", "-2.5E+3", "12e-1", "0e5", "0.0e-3",
		"1e+20", "1e-05", "123456789012345678901234567890e-10", "0.5e3", "5e-324",
	} {
		var stored string
		require.NoError(t, pool.QueryRow(context.Background(), `SELECT ($1::text::jsonb)::text`, lit).Scan(&stored))
		require.Equal(t, stored, numeric(lit), "the literal %s", lit)
		doc := `{"a":[` + lit + `,"` + lit + `"],"b":` + lit + `}`
		require.Equal(t, `{"a":[`+stored+`,"`+lit+`"],"b":`+stored+`}`, string(storedNumbers([]byte(doc))), "strings keep their text")
	}
	require.Equal(t, "1e1001", numeric("1e1001"), "a large exponent is left as written")
	require.Equal(t, `{"k\"1e2":"\\"}`, string(storedNumbers([]byte(`{"k\"1e2":"\\"}`))))
}
