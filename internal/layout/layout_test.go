package layout_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/outboxd/outboxd"

const (
	dbsqlc   = module + "/internal/platform/dbsqlc"
	dbutil   = module + "/internal/platform/dbutil"
	netguard = module + "/internal/platform/netguard"
	// tracing is what lets a source's HTTP calls carry their trace.
	tracing = module + "/internal/platform/tracing"
)

// kindImports are what the packages of an org-registered source kind
// (its CRUD service and its store, under executors/<provider>/) may import
// besides the network guard: the catalog they register with, the sealed
// credentials their secrets live in (credential's requests and tokens, and
// credentialstore, which the kind's store seals them with inside its own
// transaction), the kinds of error, and what the kinds share (orgsource;
// orgsourcestore, what their stores share). The provider packages
// themselves may not.
var kindImports = []string{
	module + "/internal/domain/catalog",
	module + "/internal/domain/credential",
	module + "/internal/domain/credential/credentialstore",
	module + "/internal/domain/errs",
	module + "/internal/domain/orgsource",
	module + "/internal/domain/orgsource/orgsourcestore",
}

// isKind reports whether p is a package of an org-registered source kind:
// one level below a provider package (executors/mcp/connectors,
// executors/database/databasestore).
func isKind(p string) bool {
	rest, ok := strings.CutPrefix(p, module+"/executors/")
	return ok && strings.Count(rest, "/") == 1 && !strings.HasSuffix(rest, "/sandbox")
}

// pkg is what go list says of one package; only non-test imports count.
type pkg struct {
	ImportPath string
	Imports    []string
}

// list returns the module's packages, as `go list ./...` run from the
// module root finds them.
func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
	out, err := cmd.Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			t.Fatalf("go list: %v\n%s", err, exitErr.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; is the test run inside the module?", len(pkgs))
	}
	return pkgs
}

// under reports whether path is dir or a package below it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// isStore reports whether p is a store package, the owner of its queries.
func isStore(p string) bool { return strings.HasSuffix(path.Base(p), "store") }

// TestImportRules checks, for each package's non-test imports:
//   - executors and its packages (test helper packages, whose name ends in
//     "test", aside) import nothing under internal/ but the network guard
//     and tracing (whose transport carries a call's trace);
//     an org-registered source kind's packages may also import kindImports,
//     and store packages the generated SQL and dbutil;
//   - only store packages (a path ending in "store") and dbutil import the
//     generated SQL (internal/platform/dbsqlc): every other package reaches
//     the database through a store;
//   - the HTTP layer (internal/api) does not import the generated SQL.
func TestImportRules(t *testing.T) {
	t.Parallel()

	for _, p := range list(t) {
		for _, imp := range p.Imports {
			if under(p.ImportPath, module+"/executors") && !strings.HasSuffix(path.Base(p.ImportPath), "test") &&
				under(imp, module+"/internal") && imp != netguard && imp != tracing &&
				!(isKind(p.ImportPath) && slices.Contains(kindImports, imp)) &&
				!(isStore(p.ImportPath) && (imp == dbsqlc || imp == dbutil)) {
				t.Errorf("%s imports %s: executors may import nothing under internal/ but %s and %s (a source kind's packages also the catalog, credentials, errs and orgsource; a store package also dbsqlc and dbutil)",
					p.ImportPath, imp, netguard, tracing)
			}
			if imp != dbsqlc {
				continue
			}
			if under(p.ImportPath, module+"/internal/api") {
				t.Errorf("%s imports %s: the HTTP layer reaches the database only through the services", p.ImportPath, imp)
			} else if !isStore(p.ImportPath) && p.ImportPath != dbutil {
				t.Errorf("%s imports %s: only store packages (named …store) may import the generated SQL; reach the database through one",
					p.ImportPath, imp)
			}
		}
	}
}

// TestImportRules_SeeWhatTheyName checks that go list answered with the
// paths the rules name, so the rules cannot pass vacuously: the invocation
// store imports the generated SQL and executors/mcp the network guard.
func TestImportRules_SeeWhatTheyName(t *testing.T) {
	t.Parallel()

	imports := map[string][]string{}
	for _, p := range list(t) {
		imports[p.ImportPath] = p.Imports
	}
	if !slices.Contains(imports[module+"/internal/domain/invocation/invocationstore"], dbsqlc) {
		t.Errorf("go list does not show the invocation store importing %s", dbsqlc)
	}
	if !slices.Contains(imports[module+"/executors/mcp"], netguard) {
		t.Errorf("go list does not show executors/mcp importing %s", netguard)
	}
}
