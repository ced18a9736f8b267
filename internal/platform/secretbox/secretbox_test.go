package secretbox

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBox(t *testing.T) {
	t.Parallel()
	box, err := New(NewKey())
	require.NoError(t, err)
	sealed := box.Seal([]byte("xoxb-secret"), []byte("org/slack"))
	require.False(t, bytes.Contains(sealed, []byte("xoxb-secret")))

	plain, err := box.Open(sealed, []byte("org/slack"))
	require.NoError(t, err)
	require.Equal(t, "xoxb-secret", string(plain))

	_, err = box.Open(sealed, []byte("other-org/slack"))
	require.ErrorIs(t, err, ErrOpen, "a sealed value moved to another row does not open")

	other, err := New(NewKey())
	require.NoError(t, err)
	_, err = other.Open(sealed, []byte("org/slack"))
	require.ErrorIs(t, err, ErrOpen)

	sealed[len(sealed)-1] ^= 1
	_, err = box.Open(sealed, []byte("org/slack"))
	require.ErrorIs(t, err, ErrOpen)
}

func TestNew_RejectsBadKeys(t *testing.T) {
	t.Parallel()
	_, err := New("not base64!")
	require.Error(t, err)
	_, err = New(base64.StdEncoding.EncodeToString(make([]byte, 16)))
	require.ErrorContains(t, err, "32 bytes")
}
