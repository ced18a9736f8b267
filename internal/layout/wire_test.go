package layout_test

import (
	"cmp"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// wireFree are the packages, by directory from the module root, whose
// non-test files declare no struct field with a json tag: the HTTP layer
// (internal/api) owns the API's JSON shapes, as views it converts from
// these packages' plain Go types and request bodies it decodes and then
// converts into them. A package here hands the API plain values only.
var wireFree = []string{
	"internal/domain/catalog",
	"executors/mcp",
	"executors/mcp/connectors",
	"executors/database/databases",
	"internal/domain/admin",
	"internal/domain/settings",
	"internal/domain/credential",
	"internal/domain/relay/slackapproval",
	"outbox",
}

// wireExceptions are the types of wireFree packages that keep json tags
// for something other than the API, by "<dir>.<type>", with the reason.
var wireExceptions = map[string]string{
	"internal/domain/catalog.schemaDoc":                  "decodes an action's JSON Schema to write its guide",
	"internal/domain/catalog.Review":                     "is stored as jsonb: executors/mcp/connectors keeps the reviews of a connector's tools in tool_risk_overrides",
	"internal/domain/credential.brokerRequest":           "is the token broker's protocol: what outboxd asks it",
	"internal/domain/credential.brokerAnswer":            "is the token broker's protocol: what it answers",
	"executors/mcp.RiskPolicy":                           "is stored as jsonb: executors/mcp/connectors keeps a connector's risk_policy, which the API shows and takes as it is stored",
	"executors/mcp.callResult":                           "is the stored result of a tool call (the invocation's result)",
	"executors/mcp.inputSchema":                          "decodes a tool's input schema to describe its arguments in a preview",
	"internal/domain/relay/slackapproval.Approver":       "is stored as jsonb: an organization's Slack approvers, by Slack user id",
	"internal/domain/relay/slackapproval.interaction":    "is Slack's protocol: the block_actions payload of a click",
	"internal/domain/relay/slackapproval.buttonValue":    "is Slack's protocol: the value an approval button carries back in a click",
	"internal/domain/relay/slackapproval.PostArgs":       "is a River job's args, stored as jsonb",
	"internal/domain/relay/slackapproval.UpdateArgs":     "is a River job's args, stored as jsonb",
	"internal/domain/relay/slackapproval.settingsRecord": "is the audit trail's record of the settings (internal/domain/audit), hashed into its chain",
	"internal/domain/settings.windowRecord":              "is the audit trail's record of a quiet window (internal/domain/audit), hashed into its chain",
}

// TestWire_APIShapesLiveInTheHTTPLayer checks that no wireFree package
// declares a json-tagged struct field outside wireExceptions.
func TestWire_APIShapesLiveInTheHTTPLayer(t *testing.T) {
	t.Parallel()

	used := map[string]bool{}
	for _, dir := range wireFree {
		for _, tagged := range jsonTagged(t, filepath.Join("..", "..", filepath.FromSlash(dir))) {
			key := dir + "." + tagged.typeName
			if _, ok := wireExceptions[key]; ok {
				used[key] = true
				continue
			}
			t.Errorf("%s: %s has the field tag %s: the HTTP layer (internal/api) owns the API's JSON shapes; only JSON that is not the API's may be an exception",
				tagged.pos, cmp.Or(tagged.typeName, "an anonymous struct"), tagged.tag)
		}
	}
	for key := range wireExceptions {
		if !used[key] {
			t.Errorf("wireExceptions lists %s, which has no json tag any more: remove it", key)
		}
	}
}

// taggedField is a struct field with a json tag, and the named type that
// declares it.
type taggedField struct {
	pos      token.Position
	typeName string
	tag      string
}

// jsonTagged returns the json-tagged struct fields of the non-test files
// in dir, nested and function-local structs included.
func jsonTagged(t *testing.T, dir string) []taggedField {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []taggedField
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		// typeName is the innermost named type around the node being
		// inspected; "" outside any (an anonymous struct in a function).
		var typeName string
		var visit func(n ast.Node) bool
		visit = func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				outer := typeName
				typeName = n.Name.Name
				ast.Inspect(n.Type, visit)
				typeName = outer
				return false
			case *ast.Field:
				if n.Tag == nil {
					return true
				}
				tag, err := strconv.Unquote(n.Tag.Value)
				if err != nil {
					t.Fatalf("%s: %v", fset.Position(n.Tag.Pos()), err)
				}
				if _, ok := reflect.StructTag(tag).Lookup("json"); ok {
					out = append(out, taggedField{pos: fset.Position(n.Tag.Pos()), typeName: typeName, tag: n.Tag.Value})
				}
			}
			return true
		}
		ast.Inspect(f, visit)
	}
	return out
}
