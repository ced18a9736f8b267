package database

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// errCopy is the read of a server's answer to COPY: a query's result is
// rows, which the caps bound, and COPY TO STDOUT streams its output in
// messages of another kind, which the driver reads to their end and
// discards: the server would work until the statement_timeout for nothing.
var errCopy = errors.New("COPY is not supported: a query returns rows, which COPY ... TO STDOUT does not; run its SELECT instead")

// MaxNoticeBytes bounds the notices (RAISE NOTICE, warnings) read of one
// statement: the driver drops them, so a statement that sends them in a
// loop would stream them to outboxd until its statement_timeout.
const MaxNoticeBytes = 1 << 20

// errNotices is the read of notices past MaxNoticeBytes.
var errNotices = fmt.Errorf("the statement sent more than %d KiB of notices (RAISE NOTICE, warnings), which outboxd does not read: it was stopped there", MaxNoticeBytes>>10)

// messageGuard is what a connection's frontend reads the server's
// messages through: it follows their framing (a type byte, a length of
// four bytes that counts itself, the body) and fails the read of a
// CopyOutResponse, CopyInResponse or CopyBothResponse, and of notices
// past MaxNoticeBytes between two ReadyForQuery (within one call's
// statement). The driver then drops the connection, which ends the
// server's statement, as a result cut at its caps does.
type messageGuard struct {
	r       io.Reader
	header  [5]byte
	have    int // bytes of the current message's header seen
	left    int // bytes of the current message's body still to pass
	notices int // bytes of notices since the last ReadyForQuery
	err     error
}

func (g *messageGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.r.Read(p)
	for i := 0; i < n; {
		if g.left > 0 {
			k := min(g.left, n-i)
			g.left -= k
			i += k
			continue
		}
		g.header[g.have] = p[i]
		g.have++
		i++
		if g.have < len(g.header) {
			continue
		}
		g.have = 0
		g.left = max(int(int32(binary.BigEndian.Uint32(g.header[1:])))-4, 0)
		switch g.header[0] {
		case 'H', 'G', 'W': // CopyOutResponse, CopyInResponse, CopyBothResponse
			g.err = errCopy
		case 'N': // NoticeResponse
			g.notices += len(g.header) + g.left
			if g.notices > MaxNoticeBytes {
				g.err = errNotices
			}
		case 'Z': // ReadyForQuery
			g.notices = 0
		}
		if g.err != nil {
			return 0, g.err
		}
	}
	return n, err
}
