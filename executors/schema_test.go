package executors_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/outboxd/outboxd/executors"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testParamsSchema = `{
	"type": "object",
	"required": ["channel", "text"],
	"additionalProperties": false,
	"properties": {
		"channel": {"type": "string", "minLength": 1},
		"text": {"type": "string", "minLength": 1},
		"blocks": {
			"type": "array",
			"items": {
				"type": "object",
				"required": ["type"],
				"properties": {
					"type": {"type": "string"},
					"text": {"type": "string"}
				}
			}
		}
	}
}`

func TestValidator_Validate(t *testing.T) {
	t.Parallel()

	type testBundle struct {
		validator *executors.Validator
		schema    json.RawMessage
	}

	setup := func(t *testing.T) *testBundle {
		t.Helper()
		return &testBundle{
			validator: executors.NewValidator(),
			schema:    json.RawMessage(testParamsSchema),
		}
	}

	validate := func(t *testing.T, bundle *testBundle, params string) []executors.FieldError {
		t.Helper()
		fieldErrs, err := bundle.validator.Validate(bundle.schema, json.RawMessage(params))
		require.NoError(t, err)
		return fieldErrs
	}

	t.Run("Valid", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		require.Empty(t, validate(t, bundle, `{"channel":"C123","text":"hello"}`))
		require.Empty(t, validate(t, bundle, `{"channel":"C123","text":"hi","blocks":[{"type":"section","text":"x"}]}`))
	})

	t.Run("DuplicateKey", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		// Named by where the second one is, nested ones included; keys
		// repeated in different objects are fine.
		for params, field := range map[string]string{
			`{"channel":"C1","text":"a","channel":"C2"}`:                                              "channel",
			`{"channel":"C1","text":"hi","blocks":[{"type":"s"},{"type":"s","text":"x","type":"t"}]}`: "blocks/1/type",
			`{"channel":"C1","text":"hi","blocks":[{"type":"s","a/b":{"k":1,"k":2}}]}`:                "blocks/0/a~1b/k",
		} {
			fieldErrs := validate(t, bundle, params)
			require.Len(t, fieldErrs, 1, params)
			require.Equal(t, field, fieldErrs[0].Field, params)
			require.Contains(t, fieldErrs[0].Message, "appears twice in one object")
		}
		require.Empty(t, validate(t, bundle, `{"channel":"C1","text":"hi","blocks":[{"type":"s","text":"x"},{"type":"s","text":"y"}]}`))
	})

	t.Run("MissingRequired", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		fieldErrs := validate(t, bundle, `{"text":"hello"}`)
		require.Len(t, fieldErrs, 1)
		require.Equal(t, "channel", fieldErrs[0].Field)
		require.Contains(t, fieldErrs[0].Message, "channel")
	})

	t.Run("MissingSeveralRequired", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		fieldErrs := validate(t, bundle, `{}`)
		require.Equal(t, []string{"channel", "text"}, fields(fieldErrs))
	})

	t.Run("WrongType", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		fieldErrs := validate(t, bundle, `{"channel":"C123","text":42}`)
		require.Len(t, fieldErrs, 1)
		require.Equal(t, "text", fieldErrs[0].Field)
		require.Contains(t, fieldErrs[0].Message, "string")
	})

	t.Run("AdditionalPropertiesFalse", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		fieldErrs := validate(t, bundle, `{"channel":"C123","text":"hello","as_user":true,"icon":"x"}`)
		require.Equal(t, []string{"as_user", "icon"}, fields(fieldErrs))
		require.Contains(t, fieldErrs[0].Message, "not allowed")
	})

	t.Run("SeveralErrorsAtOnce", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		fieldErrs := validate(t, bundle, `{"text":42,"extra":1}`)
		require.Equal(t, []string{"channel", "extra", "text"}, fields(fieldErrs))
	})

	t.Run("NestedPath", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		fieldErrs := validate(t, bundle, `{"channel":"C1","text":"x","blocks":[{"type":"section"},{"text":7}]}`)
		require.Equal(t, []string{"blocks/1/text", "blocks/1/type"}, fields(fieldErrs))
	})

	t.Run("EscapedPath", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		fieldErrs := validate(t, bundle, `{"channel":"C1","text":"x","a/b~c":1}`)
		require.Equal(t, []string{"a~1b~0c"}, fields(fieldErrs))
	})

	t.Run("NonObjectParams", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		for _, params := range []string{`[]`, `"channel"`, `42`, `null`, `true`} {
			fieldErrs := validate(t, bundle, params)
			require.Len(t, fieldErrs, 1, params)
			require.Empty(t, fieldErrs[0].Field, params)
			require.Contains(t, fieldErrs[0].Message, "JSON object", params)
		}
	})

	t.Run("MalformedJSON", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		for _, params := range []string{``, `{`, `{"channel":}`, `{"channel":"C1"} trailing`} {
			fieldErrs := validate(t, bundle, params)
			require.Len(t, fieldErrs, 1, params)
			require.Empty(t, fieldErrs[0].Field, params)
			require.Contains(t, fieldErrs[0].Message, "not valid JSON", params)
		}
	})

	t.Run("InvalidSchema", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		for _, schema := range []string{
			`{"type": 12}`,
			`{"type": "object", "required": "channel"}`,
			`{"type": "object"`,
		} {
			fieldErrs, err := bundle.validator.Validate(json.RawMessage(schema), json.RawMessage(`{}`))
			require.Error(t, err, schema)
			require.Nil(t, fieldErrs, schema)
		}
	})

	t.Run("RemoteRefRefused", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		schema := `{"$ref": "file:///etc/passwd"}`
		_, err := bundle.validator.Validate(json.RawMessage(schema), json.RawMessage(`{}`))
		require.Error(t, err)
	})

	t.Run("ConcurrentUse", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		schemas := make([]json.RawMessage, 4)
		for i := range schemas {
			schemas[i] = json.RawMessage(fmt.Sprintf(`{"type":"object","required":["f%d"]}`, i))
		}

		// require must not be called off the test goroutine, so workers
		// report what they saw and the test goroutine asserts on it.
		type outcome struct {
			fieldErrs []executors.FieldError
			err       error
			wantErrs  int
		}
		outcomes := make(chan outcome, 16*50*2)

		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				for i := range 50 {
					schema := schemas[(g+i)%len(schemas)]
					fieldErrs, err := bundle.validator.Validate(schema, json.RawMessage(`{}`))
					outcomes <- outcome{fieldErrs: fieldErrs, err: err, wantErrs: 1}

					fieldErrs, err = bundle.validator.Validate(bundle.schema, json.RawMessage(`{"channel":"C1","text":"x"}`))
					outcomes <- outcome{fieldErrs: fieldErrs, err: err, wantErrs: 0}
				}
			})
		}
		wg.Wait()
		close(outcomes)

		for o := range outcomes {
			require.NoError(t, o.err)
			require.Len(t, o.fieldErrs, o.wantErrs)
		}
	})
}

func fields(fieldErrs []executors.FieldError) []string {
	out := make([]string, len(fieldErrs))
	for i, fe := range fieldErrs {
		out[i] = fe.Field
	}
	return out
}

// TestValidator_ExactIntegers: a value a schema types as integer must be
// an integer literal a provider can decode exactly, wherever the schema
// says so (nested, behind $ref, in a type list); a number field takes any
// number.
func TestValidator_ExactIntegers(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{
		"type": "object",
		"$defs": {"n": {"type": "integer"}},
		"properties": {
			"issue_number": {"type": "integer", "minimum": 1},
			"ref": {"$ref": "#/$defs/n"},
			"nullable": {"type": ["integer", "null"]},
			"items": {"type": "array", "items": {"type": "integer"}},
			"ratio": {"type": "number"}
		}
	}`)
	v := executors.NewValidator()
	for _, ok := range []string{
		`{"issue_number": 42}`, `{"issue_number": 9007199254740991}`, `{"ref": -9007199254740991}`,
		`{"nullable": null}`, `{"nullable": 7}`, `{"items": [1, 2]}`, `{"ratio": 1e30}`, `{"ratio": 2.0}`,
	} {
		errs, err := v.Validate(schema, json.RawMessage(ok))
		require.NoError(t, err)
		require.Empty(t, errs, ok)
	}
	for params, field := range map[string]string{
		`{"issue_number": 1e30}`:                "issue_number",
		`{"issue_number": 1E3}`:                 "issue_number",
		`{"issue_number": 2.0}`:                 "issue_number",
		`{"issue_number": 9007199254740992}`:    "issue_number",
		`{"ref": -9007199254740992}`:            "ref",
		`{"ref": 1e30}`:                         "ref",
		`{"nullable": 1e30}`:                    "nullable",
		`{"items": [1, 100000000000000000000]}`: "items/1",
	} {
		errs, err := v.Validate(schema, json.RawMessage(params))
		require.NoError(t, err)
		require.Len(t, errs, 1, params)
		require.Equal(t, field, errs[0].Field, params)
		require.Contains(t, errs[0].Message, "want an integer from -9007199254740991 to 9007199254740991", params)
	}
	// A number that is not integral is the type keyword's alone to report.
	errs, err := v.Validate(schema, json.RawMessage(`{"issue_number": 1.5}`))
	require.NoError(t, err)
	require.Len(t, errs, 1)
	require.NotContains(t, errs[0].Message, "without a fraction")
}
