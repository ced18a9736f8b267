package errs_test

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/errs"
)

func TestErrorf_KeepsItsMessageAndBothCauses(t *testing.T) {
	err := errs.Errorf(errs.NotFound, "invocation not found: %s (%w)", "abc", io.ErrUnexpectedEOF)
	require.Equal(t, "invocation not found: abc (unexpected EOF)", err.Error(), "the message is the service's own, not the kind's")
	require.ErrorIs(t, err, errs.NotFound)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.NotErrorIs(t, err, errs.Conflict)

	wrapped := fmt.Errorf("approving: %w", err)
	require.Same(t, errs.NotFound, errs.KindOf(wrapped))
	require.Nil(t, errs.KindOf(errors.New("plain")))
	require.Same(t, errs.Conflict, errs.KindOf(fmt.Errorf("%w: name taken", errs.Conflict)))
}

func TestKinds_HaveDistinctCodes(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range errs.All {
		require.NotEmpty(t, k.Code)
		require.False(t, seen[k.Code], "code %s twice", k.Code)
		seen[k.Code] = true
	}
}

func TestInvalid_IsOneField(t *testing.T) {
	err := errs.Invalid("events[2]", "events[%d]: unknown event %q", 2, "x")
	require.Equal(t, "events[2]: unknown event \"x\": 1 invalid field(s)", err.Error())
	require.Equal(t, "events[2]", err.Fields[0].Field)
	require.Equal(t, err.Message, err.Fields[0].Message)
}
