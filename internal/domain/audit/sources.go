package audit

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// targetActionModes is the target type of the action modes' changes,
// whose keys ("<source>:<action>") name their sources.
const targetActionModes = "action_modes"

// sourcePrefixes are the target types whose target is a source of its
// own, with the prefix of its source id before the target's id
// (executors/mcp and executors/database SourceID).
var sourcePrefixes = map[string]string{"connector": "connector:", "database": "database:"}

// sourcesOf are the sources c's entry e concerns, sorted and without
// repeats or empty ids: c.Sources, or given none, for action modes the
// sources of the keys of e's before and after (every override of the
// scope, changed or not, as both states show them), and for a connector
// or a database its source id (its target, by id or by source id).
func sourcesOf(c *Change, e *Entry) ([]string, error) {
	sources := c.Sources
	if prefix, ok := sourcePrefixes[c.TargetType]; ok && sources == nil && c.TargetID != "" {
		sources = []string{prefix + strings.TrimPrefix(c.TargetID, prefix)}
	}
	if sources == nil && c.TargetType == targetActionModes {
		for _, state := range []json.RawMessage{e.Before, e.After} {
			var modes map[string]json.RawMessage
			if err := json.Unmarshal(state, &modes); err != nil {
				return nil, fmt.Errorf("audit: reading the sources of %s: %w", c.Action, err)
			}
			for key := range modes {
				if i := strings.LastIndex(key, ":"); i > 0 {
					sources = append(sources, key[:i])
				}
			}
		}
	}
	out := make([]string, 0, len(sources))
	for _, id := range sources {
		if id != "" {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
