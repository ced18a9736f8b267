package database_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/database/databasetest"
)

func TestPreview_QueryWithItsEstimate(t *testing.T) {
	tg := databasetest.NewTarget(t)
	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop"})
	pv, ok := src.(executors.Previewer)
	require.True(t, ok, "a database renders previews")
	preview := func(action string, params any) (*executors.Preview, error) {
		raw, err := json.Marshal(params)
		require.NoError(t, err)
		return pv.Preview(context.Background(), action, raw, executors.ExecContext{Token: tg.URL})
	}

	t.Run("EXPLAIN's estimate, the statement not run", func(t *testing.T) {
		got, err := preview(database.ActionQuery, map[string]any{"sql": `SELECT n FROM public.big WHERE n > $1`, "params": []any{19000}})
		require.NoError(t, err)
		require.Equal(t, executors.PreviewQuery, got.Kind)
		require.Equal(t, "Query on shop", got.Title)
		require.Equal(t, `SELECT n FROM public.big WHERE n > $1`, got.Text)
		require.Equal(t, []executors.PreviewField{{Name: "$1", Value: "19000"}}, got.Fields)
		require.NotNil(t, got.Plan)
		require.Contains(t, got.Plan.Node, "Scan")
		require.Equal(t, []string{"public.big"}, got.Plan.Relations)
		require.Greater(t, got.Plan.Rows, 0.0)
		require.Greater(t, got.Plan.TotalCost, got.Plan.StartupCost)
	})
	t.Run("a write is planned, never run", func(t *testing.T) {
		before := tg.ItemCount(t)
		got, err := preview(database.ActionQuery, map[string]any{"sql": `SELECT shop.write_item('previewed')`})
		require.NoError(t, err)
		require.Equal(t, "Result", got.Plan.Node)
		require.Equal(t, before, tg.ItemCount(t))
	})
	t.Run("a query the database refuses fails, without the URL", func(t *testing.T) {
		_, err := preview(database.ActionQuery, map[string]any{"sql": `SELECT * FROM shop.missing`})
		var e *executors.Error
		require.True(t, errors.As(err, &e))
		require.NotContains(t, e.Error(), tg.URL)
		require.Contains(t, e.Message, "missing")
	})
	t.Run("the catalog reads render none", func(t *testing.T) {
		_, err := preview(database.ActionListTables, map[string]any{})
		require.ErrorIs(t, err, executors.ErrNoPreview)
	})
}
