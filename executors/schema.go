package executors

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemaResourceURL is the location each schema is compiled under. Schemas
// are compiled one per compiler, so a single fixed location is enough; it
// only shows up in the library's own error messages.
const schemaResourceURL = "mem:///params.schema.json"

// maxCachedSchemas bounds the compiled-schema cache. Connector sources can
// publish new schemas over the life of a process, so the cache is reset
// rather than allowed to grow without limit.
const maxCachedSchemas = 1024

var schemaPrinter = message.NewPrinter(language.English)

// FieldError is one failing field of a params document.
type FieldError struct {
	// Field is the slash-separated path of the failing value, like "channel"
	// or "blocks/0/text", with "~" and "/" escaped as in a JSON pointer. It
	// is "" when the document as a whole is wrong.
	Field string `json:"field"`
	// Message says what is wrong, in words an agent can act on.
	Message string `json:"message"`
}

// Validator checks action params against the JSON Schema an action declares.
// It is safe for concurrent use. Compiled schemas are cached by the sha256 of
// their bytes, so the same definition is only compiled once however often it
// is validated against.
type Validator struct {
	mu      sync.RWMutex
	schemas map[[sha256.Size]byte]*jsonschema.Schema
}

// NewValidator returns a Validator with an empty cache.
func NewValidator() *Validator {
	return &Validator{schemas: make(map[[sha256.Size]byte]*jsonschema.Schema)}
}

// Validate checks params against schema and returns one FieldError per
// failing field, sorted by field. A nil slice means params are valid. The
// error is non-nil only when schema itself cannot be compiled: a bad params
// document is the caller's problem and is reported as a FieldError, at the
// root when params are malformed or not a JSON object.
func (v *Validator) Validate(schema, params json.RawMessage) ([]FieldError, error) {
	return v.validate(schema, params, true)
}

// ValidateValue is Validate for any JSON value, not only an object: an
// action's output against its output schema.
func (v *Validator) ValidateValue(schema, value json.RawMessage) ([]FieldError, error) {
	return v.validate(schema, value, false)
}

// Check reports whether schema compiles.
func (v *Validator) Check(schema json.RawMessage) error {
	_, err := v.compiled(schema)
	return err
}

func (v *Validator) validate(schema, params json.RawMessage, object bool) ([]FieldError, error) {
	sch, err := v.compiled(schema)
	if err != nil {
		return nil, err
	}

	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		what := "the value is"
		if object {
			what = "params are"
		}
		return []FieldError{{Field: "", Message: what + " not valid JSON: " + err.Error()}}, nil
	}
	if _, ok := doc.(map[string]any); object && !ok {
		return []FieldError{{Field: "", Message: "params must be a JSON object"}}, nil
	}
	if path, dup := duplicateKey(params); dup && object {
		return []FieldError{{Field: fieldPath(path), Message: fmt.Sprintf("key '%s' appears twice in one object: give each key once", path[len(path)-1])}}, nil
	}

	err = sch.Validate(doc)
	if err == nil {
		return nil, nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		// Validate only ever reports *ValidationError; anything else is
		// still a rejection of params, not of the schema.
		return []FieldError{{Field: "", Message: err.Error()}}, nil
	}
	return fieldErrors(verr), nil
}

// compiled returns the cached compilation of schema, compiling it on a miss.
// Two goroutines missing at once both compile; the result is identical, so
// the race is harmless and cheaper than holding a lock while compiling.
func (v *Validator) compiled(schema json.RawMessage) (*jsonschema.Schema, error) {
	key := sha256.Sum256(schema)

	v.mu.RLock()
	sch, ok := v.schemas[key]
	v.mu.RUnlock()
	if ok {
		return sch, nil
	}

	sch, err := compileSchema(schema)
	if err != nil {
		return nil, err
	}

	v.mu.Lock()
	defer v.mu.Unlock()
	if existing, ok := v.schemas[key]; ok {
		return existing, nil
	}
	if len(v.schemas) >= maxCachedSchemas {
		clear(v.schemas)
	}
	v.schemas[key] = sch
	return sch, nil
}

// compileSchema compiles one schema document. Remote references are refused:
// a schema published by a connector must not make this process read files or
// fetch URLs.
func compileSchema(schema json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("parsing params schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	c.AssertVocabs()
	c.RegisterVocabulary(exactIntegers)
	if err := c.AddResource(schemaResourceURL, doc); err != nil {
		return nil, fmt.Errorf("adding params schema: %w", err)
	}
	sch, err := c.Compile(schemaResourceURL)
	if err != nil {
		return nil, fmt.Errorf("compiling params schema: %w", err)
	}
	return sch, nil
}

// fieldErrors flattens a validation error tree into its failing leaves, the
// same set the "basic" output format lists, one FieldError per leaf. A
// "required" or "additionalProperties" leaf is split per property so the
// Field names the property itself rather than its parent object.
func fieldErrors(verr *jsonschema.ValidationError) []FieldError {
	var out []FieldError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, name := range k.Missing {
				out = append(out, FieldError{
					Field:   fieldPath(append(slices.Clip(e.InstanceLocation), name)),
					Message: (&kind.Required{Missing: []string{name}}).LocalizedString(schemaPrinter),
				})
			}
		case *kind.AdditionalProperties:
			for _, name := range k.Properties {
				out = append(out, FieldError{
					Field:   fieldPath(append(slices.Clip(e.InstanceLocation), name)),
					Message: fmt.Sprintf("additional property '%s' is not allowed", name),
				})
			}
		default:
			out = append(out, FieldError{
				Field:   fieldPath(e.InstanceLocation),
				Message: e.ErrorKind.LocalizedString(schemaPrinter),
			})
		}
	}
	walk(verr)

	slices.SortStableFunc(out, func(a, b FieldError) int {
		return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.Message, b.Message))
	})
	return slices.Compact(out)
}

// fieldPath renders an instance location as a JSON pointer without its
// leading slash.
func fieldPath(tokens []string) string {
	escaped := make([]string, len(tokens))
	for i, tok := range tokens {
		escaped[i] = strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
	}
	return strings.Join(escaped, "/")
}
