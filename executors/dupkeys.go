package executors

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// duplicateKey returns where data, valid JSON, first has a key twice in
// one object: the object's location and the key (see fieldPath). The
// schema validator, Postgres's jsonb and the approver's view all read the
// last of two such members, but the exact params reach some providers as
// sent (an MCP server's arguments), whose parser may keep the first: what
// was approved and what is done would differ.
func duplicateKey(data []byte) (path []string, found bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	path, found, _ = duplicateIn(dec, nil)
	return path, found
}

// duplicateIn reads one value from dec, at path.
func duplicateIn(dec *json.Decoder, path []string) ([]string, bool, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, false, err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]struct{}{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, false, err
			}
			key, _ := tok.(string)
			if _, dup := seen[key]; dup {
				return append(path, key), true, nil
			}
			seen[key] = struct{}{}
			if at, found, err := duplicateIn(dec, append(path, key)); found || err != nil {
				return at, found, err
			}
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if at, found, err := duplicateIn(dec, append(path, strconv.Itoa(i))); found || err != nil {
				return at, found, err
			}
		}
	default:
		return nil, false, nil
	}
	_, err = dec.Token() // the closing delimiter
	return nil, false, err
}
