package executors

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/message"
)

// MaxExactInteger is the largest magnitude an integer param may have: the
// largest integer every JSON reader holds exactly (2^53-1, I-JSON's bound).
const MaxExactInteger = 1<<53 - 1

// exactIntegers is a schema vocabulary of no keywords of its own: wherever
// a schema says a value is an integer (and not also a number), the value
// must be written as one, without a fraction or an exponent, and be at
// most MaxExactInteger in magnitude. JSON Schema counts 1e30 and 2.0 as
// integers; the providers' own decoders (Go's int, for one) refuse them,
// so without this they would be accepted, stored and fail only when run.
var exactIntegers = &jsonschema.Vocabulary{
	URL: "https://outboxd.invalid/vocab/exact-integers",
	Compile: func(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
		var types []any
		switch t := obj["type"].(type) {
		case string:
			types = []any{t}
		case []any:
			types = t
		}
		if slices.Contains(types, any("integer")) && !slices.Contains(types, any("number")) {
			return exactInteger{}, nil
		}
		return nil, nil
	},
}

type exactInteger struct{}

// Validate reports an integral number written with a fraction or an
// exponent, or beyond MaxExactInteger. A number that is not integral at
// all is left to the type keyword, which already reports it.
func (exactInteger) Validate(ctx *jsonschema.ValidatorContext, v any) {
	n, ok := v.(json.Number)
	if !ok {
		return
	}
	s := string(n)
	digits := strings.TrimPrefix(s, "-")
	if !strings.ContainsAny(digits, ".eE") {
		if len(digits) <= 15 || withinExact(digits) { // 15 digits are below 2^53
			return
		}
		ctx.AddError(&inexactInteger{got: s})
		return
	}
	if r, ok := new(big.Rat).SetString(s); ok && r.IsInt() {
		ctx.AddError(&inexactInteger{got: s})
	}
}

// withinExact reports whether the decimal digits are at most
// MaxExactInteger.
func withinExact(digits string) bool {
	i, ok := new(big.Int).SetString(digits, 10)
	return ok && i.IsInt64() && i.Int64() <= MaxExactInteger
}

// inexactInteger is the error of exactInteger.
type inexactInteger struct{ got string }

func (*inexactInteger) KeywordPath() []string { return []string{"type"} }

func (k *inexactInteger) LocalizedString(*message.Printer) string {
	got := k.got
	if len(got) > 40 {
		got = got[:40] + "…"
	}
	return fmt.Sprintf("got %s, want an integer from -%d to %d written without a fraction or exponent", got, MaxExactInteger, MaxExactInteger)
}
