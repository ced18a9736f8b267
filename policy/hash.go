package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
)

// CanonicalJSON re-encodes doc compactly with object keys sorted by their
// UTF-8 bytes (which is code point order), so that documents differing only
// in key order or whitespace encode identically. Number literals are kept
// exactly as written (1 and 1.0 differ; one jsonb cannot hold becomes a
// string of its text, as in Redact), strings are re-escaped minimally,
// and of duplicate keys the last wins, as with encoding/json.
func CanonicalJSON(doc json.RawMessage) ([]byte, error) {
	v, err := parseJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("canonicalizing JSON: %w", err)
	}
	canonicalize(&v)
	return appendValue(make([]byte, 0, len(doc)), &v), nil
}

func canonicalize(v *value) {
	switch v.kind {
	case kindArray:
		for i := range v.elems {
			canonicalize(&v.elems[i])
		}
	case kindObject:
		v.members = dedupeMembers(v.members)
		sort.Slice(v.members, func(i, j int) bool { return v.members[i].key < v.members[j].key })
		for i := range v.members {
			canonicalize(&v.members[i].val)
		}
	}
}

// dedupeMembers keeps the last member for each key.
func dedupeMembers(members []member) []member {
	last := make(map[string]int, len(members))
	for i, m := range members {
		last[m.key] = i
	}
	if len(last) == len(members) {
		return members
	}
	out := make([]member, 0, len(last))
	for i, m := range members {
		if last[m.key] == i {
			out = append(out, m)
		}
	}
	return out
}

// volatileKeywords are the schema keywords DefinitionHash ignores because
// they commonly carry dynamic data (descriptions that get reworded, enums of
// current channel names, defaults) and changing them does not change what a
// tool can be asked to do.
var volatileKeywords = map[string]bool{"description": true, "default": true, "enum": true}

// nameMapKeywords are schema keywords whose value is an object keyed by
// names chosen by the schema author rather than by keywords: a property
// called "description" is part of the tool's interface and must stay in the
// hash.
var nameMapKeywords = map[string]bool{
	"properties":        true,
	"patternProperties": true,
	"$defs":             true,
	"definitions":       true,
	"dependentSchemas":  true,
	"dependentRequired": true,
	"dependencies":      true,
}

// DefinitionHash fingerprints a tool's JSON Schema for drift detection: the
// hex SHA-256 of its canonical form (see CanonicalJSON) after removing the
// "description", "default" and "enum" keywords at every depth. Keys of name
// maps such as "properties" and "$defs" are names, not keywords, so a
// property named "description" is kept while the keywords inside its own
// schema are removed.
func DefinitionHash(schema json.RawMessage) (string, error) {
	v, err := parseJSON(schema)
	if err != nil {
		return "", fmt.Errorf("hashing definition: %w", err)
	}
	stripVolatile(&v)
	canonicalize(&v)
	sum := sha256.Sum256(appendValue(nil, &v))
	return hex.EncodeToString(sum[:]), nil
}

// stripVolatile removes volatile keywords from v, treated as a schema (or a
// value inside one, such as the list under "allOf").
func stripVolatile(v *value) {
	switch v.kind {
	case kindArray:
		for i := range v.elems {
			stripVolatile(&v.elems[i])
		}
	case kindObject:
		kept := v.members[:0]
		for _, m := range v.members {
			if volatileKeywords[m.key] {
				continue
			}
			if nameMapKeywords[m.key] && m.val.kind == kindObject {
				for i := range m.val.members {
					stripVolatile(&m.val.members[i].val)
				}
			} else {
				stripVolatile(&m.val)
			}
			kept = append(kept, m)
		}
		v.members = kept
	}
}
