package database

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"
)

// The guard follows the messages' framing whatever the reads' sizes: a
// value holding the bytes of a copy message's type passes, a copy
// message does not.
func TestCopyGuard(t *testing.T) {
	var stream []byte
	for _, msg := range []pgproto3.BackendMessage{
		&pgproto3.ParseComplete{},
		&pgproto3.BindComplete{},
		&pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("HGW")}}},
		&pgproto3.DataRow{Values: [][]byte{bytes.Repeat([]byte("HGW"), 5000)}},
		&pgproto3.DataRow{Values: [][]byte{[]byte("H")}},
		&pgproto3.CommandComplete{CommandTag: []byte("SELECT 2")},
		&pgproto3.ReadyForQuery{TxStatus: 'T'},
	} {
		var err error
		stream, err = msg.Encode(stream)
		require.NoError(t, err)
	}
	for _, r := range []func(io.Reader) io.Reader{func(r io.Reader) io.Reader { return r }, iotest.OneByteReader, iotest.HalfReader} {
		got, err := io.ReadAll(&copyGuard{r: r(bytes.NewReader(stream))})
		require.NoError(t, err)
		require.Equal(t, stream, got)
	}

	for _, msg := range []pgproto3.BackendMessage{&pgproto3.CopyOutResponse{}, &pgproto3.CopyInResponse{}, &pgproto3.CopyBothResponse{}} {
		copyStream, err := msg.Encode(append([]byte(nil), stream...))
		require.NoError(t, err)
		copyStream, err = (&pgproto3.CopyData{Data: []byte("1\n")}).Encode(copyStream)
		require.NoError(t, err)
		for _, r := range []func(io.Reader) io.Reader{func(r io.Reader) io.Reader { return r }, iotest.OneByteReader} {
			_, err := io.ReadAll(&copyGuard{r: r(bytes.NewReader(copyStream))})
			require.ErrorIs(t, err, errCopy, "%T", msg)
		}
	}
}
