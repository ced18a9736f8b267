package tracing_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogLinesInsideWorkCarryTheirContext fails when a function that is
// given a request or a context logs without it (logger.Warn rather than
// logger.WarnContext): its line would carry no trace_id or span_id,
// which LogHandler adds from the context only (docs/operations.md,
// "Tracing"). A line about the process itself is logged in functions
// that have neither.
func TestLogLinesInsideWorkCarryTheirContext(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "..")
	var found []string
	files := 0
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			var typ *ast.FuncType
			var body *ast.BlockStmt
			switch f := n.(type) {
			case *ast.FuncDecl:
				typ, body = f.Type, f.Body
			case *ast.FuncLit:
				typ, body = f.Type, f.Body
			default:
				return true
			}
			if body == nil || !givenWork(typ) {
				return true
			}
			ast.Inspect(body, func(n ast.Node) bool {
				if _, ok := n.(*ast.FuncLit); ok {
					return false // judged on its own parameters
				}
				if call, ok := n.(*ast.CallExpr); ok && plainLog(call) {
					found = append(found, fset.Position(call.Pos()).String())
				}
				return true
			})
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no Go file read")
	}
	if len(found) > 0 {
		t.Fatalf("log with the context these functions are given (InfoContext, WarnContext, ErrorContext, DebugContext):\n%s", strings.Join(found, "\n"))
	}
}

// givenWork reports whether a function takes a context.Context or an
// *http.Request.
func givenWork(typ *ast.FuncType) bool {
	for _, p := range typ.Params.List {
		switch t := p.Type.(type) {
		case *ast.SelectorExpr:
			if pkg, ok := t.X.(*ast.Ident); ok && pkg.Name == "context" && t.Sel.Name == "Context" {
				return true
			}
		case *ast.StarExpr:
			if sel, ok := t.X.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "http" && sel.Sel.Name == "Request" {
					return true
				}
			}
		}
	}
	return false
}

// plainLog reports a call such as s.logger.Warn(...) or logger.Info(...):
// a logger's level method without a context.
func plainLog(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	switch sel.Sel.Name {
	case "Debug", "Info", "Warn", "Error":
	default:
		return false
	}
	var recv string
	switch x := sel.X.(type) {
	case *ast.Ident:
		recv = x.Name
	case *ast.SelectorExpr:
		recv = x.Sel.Name
	default:
		return false
	}
	return strings.EqualFold(recv, "logger") || strings.HasSuffix(recv, "Logger") || strings.HasSuffix(recv, "logger")
}
