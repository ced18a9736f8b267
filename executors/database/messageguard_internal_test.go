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
// message does not, nor more than MaxNoticeBytes of notices between two
// ReadyForQuery.
func TestMessageGuard(t *testing.T) {
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
		got, err := io.ReadAll(&messageGuard{r: r(bytes.NewReader(stream))})
		require.NoError(t, err)
		require.Equal(t, stream, got)
	}

	for _, msg := range []pgproto3.BackendMessage{&pgproto3.CopyOutResponse{}, &pgproto3.CopyInResponse{}, &pgproto3.CopyBothResponse{}} {
		copyStream, err := msg.Encode(append([]byte(nil), stream...))
		require.NoError(t, err)
		copyStream, err = (&pgproto3.CopyData{Data: []byte("1\n")}).Encode(copyStream)
		require.NoError(t, err)
		for _, r := range []func(io.Reader) io.Reader{func(r io.Reader) io.Reader { return r }, iotest.OneByteReader} {
			_, err := io.ReadAll(&messageGuard{r: r(bytes.NewReader(copyStream))})
			require.ErrorIs(t, err, errCopy, "%T", msg)
		}
	}

	notice := &pgproto3.NoticeResponse{Severity: "NOTICE", Code: "00000", Message: string(bytes.Repeat([]byte("n"), 100<<10))}
	var notices []byte
	for range 2 {
		for range 6 { // 600 KiB
			var err error
			notices, err = notice.Encode(notices)
			require.NoError(t, err)
		}
		var err error
		notices, err = (&pgproto3.ReadyForQuery{TxStatus: 'I'}).Encode(notices)
		require.NoError(t, err)
	}
	got, err := io.ReadAll(&messageGuard{r: iotest.HalfReader(bytes.NewReader(notices))})
	require.NoError(t, err, "600 KiB of notices for each of two statements")
	require.Equal(t, notices, got)
	one := bytes.ReplaceAll(notices, []byte("Z\x00\x00\x00\x05I"), nil)
	require.Len(t, one, len(notices)-12)
	_, err = io.ReadAll(&messageGuard{r: bytes.NewReader(one)})
	require.ErrorIs(t, err, errNotices, "1.2 MiB of notices for one statement")
}
