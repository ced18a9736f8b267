package executors_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
)

func TestError_Unwrap(t *testing.T) {
	t.Parallel()

	t.Run("CauseReachable", func(t *testing.T) {
		t.Parallel()

		classified := &executors.Error{Code: "timeout", Message: "too slow", Retryable: true, Cause: context.DeadlineExceeded}
		err := fmt.Errorf("calling X: %w", classified)

		require.EqualError(t, classified, "timeout: too slow")
		var e *executors.Error
		require.ErrorAs(t, err, &e)
		require.Same(t, classified, e)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})

	t.Run("NoCause", func(t *testing.T) {
		t.Parallel()

		err := &executors.Error{Code: "channel_not_found"}
		require.EqualError(t, err, "channel_not_found")
		require.NoError(t, errors.Unwrap(err))
	})
}
