package audit

import (
	"slices"
	"strings"
)

// sourcePrefixes are the target types whose target is a source of its
// own, with the prefix of its source id before the target's id
// (executors/mcp and executors/database SourceID).
var sourcePrefixes = map[string]string{"connector": "connector:", "database": "database:"}

// sourcesOf are the sources c's entry concerns, sorted and without
// repeats or empty ids: c.Sources, or given none, for a connector or a
// database its source id (its target, by id or by source id).
func sourcesOf(c *Change) []string {
	sources := c.Sources
	if prefix, ok := sourcePrefixes[c.TargetType]; ok && sources == nil && c.TargetID != "" {
		sources = []string{prefix + strings.TrimPrefix(c.TargetID, prefix)}
	}
	out := make([]string, 0, len(sources))
	for _, id := range sources {
		if id != "" {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
