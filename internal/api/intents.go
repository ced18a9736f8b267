package api

import (
	"bytes"
	"encoding/json"
)

// editedParams is an approval's params: nil when the body has none (or
// null), the edit otherwise.
func editedParams(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	return raw
}
