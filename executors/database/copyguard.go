package database

import (
	"encoding/binary"
	"errors"
	"io"
)

// errCopy is the read of a server's answer to COPY: a query's result is
// rows, which the caps bound, and COPY TO STDOUT streams its output in
// messages of another kind, which the driver reads to their end and
// discards: the server would work until the statement_timeout for nothing.
var errCopy = errors.New("COPY is not supported: a query returns rows, which COPY ... TO STDOUT does not; run its SELECT instead")

// copyGuard is what a connection's frontend reads the server's messages
// through: it follows their framing (a type byte, a length of four bytes
// that counts itself, the body) and fails the read of a CopyOutResponse,
// CopyInResponse or CopyBothResponse. The driver then drops the
// connection, which ends the server's COPY, as a result cut at its caps
// does.
type copyGuard struct {
	r      io.Reader
	header [5]byte
	have   int // bytes of the current message's header seen
	left   int // bytes of the current message's body still to pass
	err    error
}

func (g *copyGuard) Read(p []byte) (int, error) {
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
		if g.have == 1 {
			switch p[i-1] {
			case 'H', 'G', 'W': // CopyOutResponse, CopyInResponse, CopyBothResponse
				g.err = errCopy
				return 0, g.err
			}
		}
		if g.have == len(g.header) {
			g.left = max(int(int32(binary.BigEndian.Uint32(g.header[1:])))-4, 0)
			g.have = 0
		}
	}
	return n, err
}
