package layout_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// apiValues are the collaborators of the HTTP layer that are values, not
// services: what it verifies tokens with, pings for readiness, gathers
// metrics from, counts requests with and logs to, a handler it mounts
// as is (Slack's clicks, which Slack signs), and settings.
var apiValues = []string{
	"*auth.Verifier", "*pgxpool.Pool", "prometheus.Gatherer", "*slog.Logger",
	"StreamConfig", "time.Duration", "*httpserver.AddrLimiter", "*httpserver.OrgLimiter", "rate.Sometimes", "http.Handler", "bool", "string",
}

// TestAPI_ReachesServicesThroughInterfaces checks that the HTTP layer
// (internal/api) holds every service as an interface it declares itself,
// so that its validation, bad-input and error-mapping tests run against
// fakes without Postgres: every field of its Deps and Server structs is
// such an interface or one of apiValues, and no non-test file calls a
// constructor (New…) of another of the module's packages.
func TestAPI_ReachesServicesThroughInterfaces(t *testing.T) {
	t.Parallel()

	dir := filepath.Join("..", "api")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}

	interfaces := map[string]bool{}
	structs := map[string]*ast.StructType{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			switch typ := ts.Type.(type) {
			case *ast.InterfaceType:
				interfaces[ts.Name.Name] = true
			case *ast.StructType:
				structs[ts.Name.Name] = typ
			}
			return true
		})
	}
	for _, name := range []string{"Deps", "Server"} {
		st := structs[name]
		if st == nil {
			t.Fatalf("internal/api declares no %s struct", name)
		}
		for _, field := range st.Fields.List {
			typ := types(field.Type)
			if interfaces[typ] || slices.Contains(apiValues, typ) || isPlain(field.Type) {
				continue
			}
			for _, n := range field.Names {
				t.Errorf("internal/api: %s.%s is a %s: hold services as interfaces declared in internal/api (services.go)", name, n.Name, typ)
			}
		}
	}

	for _, f := range files {
		module := map[string]bool{} // local names of the module's imported packages
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "github.com/outboxd/outboxd/") {
				local := filepath.Base(p)
				if imp.Name != nil {
					local = imp.Name.Name
				}
				module[local] = true
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && module[x.Name] && strings.HasPrefix(sel.Sel.Name, "New") {
				t.Errorf("%s: internal/api calls %s.%s: services are built in internal/app and reach the HTTP layer through its interfaces",
					fset.Position(call.Pos()), x.Name, sel.Sel.Name)
			}
			return true
		})
	}
}

// types renders a field type as written: "Outbox", "*auth.Verifier".
func types(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return "*" + types(e.X)
	case *ast.SelectorExpr:
		return types(e.X) + "." + e.Sel.Name
	}
	return "?"
}

// isPlain reports whether e is state of the server itself, not a
// collaborator: a channel, a sync.Once or a map, slice or func.
func isPlain(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.ChanType, *ast.MapType, *ast.ArrayType, *ast.FuncType:
		return true
	case *ast.SelectorExpr:
		return types(e) == "sync.Once" || types(e) == "sync.Mutex"
	}
	return false
}
