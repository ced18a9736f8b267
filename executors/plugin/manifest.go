package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/policy"
)

// manifest is a package's action.json, the Action API contract's plugin
// action package: its fields and their camelCase names. Unknown fields
// are ignored, so a later version of the contract may add optional ones.
type manifest struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	RiskTier     *string         `json:"riskTier"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Permissions  struct {
		Commands   []string `json:"commands"`
		Filesystem string   `json:"filesystem"`
		Network    []string `json:"network"`
	} `json:"permissions"`
	Verification struct {
		Required bool     `json:"required"`
		Commands []string `json:"commands"`
	} `json:"verification"`
	Rollback struct {
		Required bool `json:"required"`
	} `json:"rollback"`
}

// action is one loaded plugin package.
type action struct {
	def executors.Definition
	dir string
	// outputSchema is the schema of execute's output; nil for none.
	outputSchema json.RawMessage
	// execute, verify and rollback are the argv prefixes of the package's
	// executables (node and the script for a .js file); verify and
	// rollback are nil when the package does not ship them.
	execute, verify, rollback []string
	// commands are the declared verification commands, as words.
	commands [][]string
	// writable is permissions.filesystem "workspace".
	writable bool
	// network is permissions.network.
	network []hostPort
	// exec are the files the sandbox lets the package's processes
	// execute: its executables, node for a .js one, the declared commands
	// and the interpreters and loaders they need.
	exec []string
}

// namePattern is what a plugin name may be: a plain identifier, so that
// it can never spell another source's id or a dispatch key.
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// maxManifestBytes is the most an action.json may hold, 1 MiB.
const maxManifestBytes = 1 << 20

// loadAction reads and checks the package in dir.
func (l *loader) loadAction(dir string) (*action, error) {
	raw, err := readManifest(filepath.Join(dir, "action.json"))
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("action.json: %w", err)
	}
	base := filepath.Base(dir)
	switch {
	case m.Name == "":
		return nil, errors.New(`action.json: "name" is required`)
	case m.Name != base:
		return nil, fmt.Errorf("action.json: name %q must be the package's directory name %q", m.Name, base)
	case !namePattern.MatchString(m.Name):
		return nil, fmt.Errorf("action.json: name %q must be lower-case letters, digits and _, starting with a letter (at most 64)", m.Name)
	}
	if err := l.reserved.check(m.Name); err != nil {
		return nil, err
	}

	// A missing tier is treated conservatively: R4, never without a human.
	tier := executors.TierR4
	if m.RiskTier != nil {
		t, ok := policy.ParseTier(*m.RiskTier)
		if !ok {
			return nil, fmt.Errorf("action.json: riskTier %q is not one of R0, R1, R2, R3, R4", *m.RiskTier)
		}
		tier = t
	}
	a := &action{dir: dir, def: executors.Definition{
		ID: m.Name, Description: strings.TrimSpace(m.Description), Tier: tier, Params: m.InputSchema,
		// The key is in OUTBOXD_IDEMPOTENCY_KEY; whether the plugin's code
		// uses it, outboxd cannot tell.
		Delivery: executors.DeliveryAtLeastOnce,
	}}
	if a.def.Description == "" {
		a.def.Description = "Plugin action " + m.Name + "."
	}
	if len(a.def.Params) == 0 || string(a.def.Params) == "null" {
		a.def.Params = json.RawMessage(`{"type":"object"}`)
	}
	if err := l.validator.Check(a.def.Params); err != nil {
		return nil, fmt.Errorf("action.json: inputSchema: %w", err)
	}
	if len(m.OutputSchema) > 0 && string(m.OutputSchema) != "null" {
		if err := l.validator.Check(m.OutputSchema); err != nil {
			return nil, fmt.Errorf("action.json: outputSchema: %w", err)
		}
		a.outputSchema = m.OutputSchema
	}

	switch m.Permissions.Filesystem {
	case "", fsNone:
	case fsWorkspace:
		a.writable = true
	default:
		return nil, fmt.Errorf("action.json: permissions.filesystem %q is not one of %q, %q", m.Permissions.Filesystem, fsNone, fsWorkspace)
	}
	if a.network, err = parseNetwork(m.Permissions.Network, l.allowPrivate); err != nil {
		return nil, fmt.Errorf("action.json: %w", err)
	}

	// Declared commands pass the allowlist before anything runs.
	for _, c := range []struct {
		field string
		cmds  []string
	}{{"verification.commands", m.Verification.Commands}, {"permissions.commands", m.Permissions.Commands}} {
		for _, cmd := range c.cmds {
			words, err := l.allowlist.allow(cmd)
			if err != nil {
				return nil, fmt.Errorf("action.json: %s: %w", c.field, err)
			}
			if c.field == "verification.commands" {
				a.commands = append(a.commands, words)
			}
			if path, err := lookChildPath(words[0]); err == nil && filepath.IsAbs(path) {
				a.exec = append(a.exec, executables(path)...)
			}
		}
	}

	if a.execute, err = l.program(dir, "execute"); err != nil {
		return nil, err
	}
	if a.execute == nil {
		return nil, errors.New("the package has no execute executable (execute or execute.js)")
	}
	if a.verify, err = l.program(dir, "verify"); err != nil {
		return nil, err
	}
	if a.rollback, err = l.program(dir, "rollback"); err != nil {
		return nil, err
	}
	for _, argv := range [][]string{a.execute, a.verify, a.rollback} {
		if len(argv) > 0 {
			a.exec = append(a.exec, executables(argv[0])...)
		}
	}
	// An R2 action is a write: the contract wants it verified and able to
	// roll back, so a failed verification can undo it.
	write := tier == executors.TierR2
	switch {
	case a.verify == nil && (m.Verification.Required || write):
		return nil, fmt.Errorf("%s requires verification: the package must ship verify (or verify.js)", requirement(write, "verification.required"))
	case a.rollback == nil && (m.Rollback.Required || write):
		return nil, fmt.Errorf("%s requires rollback: the package must ship rollback (or rollback.js)", requirement(write, "rollback.required"))
	}
	return a, nil
}

// readManifest reads the action.json at path: a regular file (a named
// pipe would hold the start until something writes to it, a device such
// as /dev/zero never ends) of at most maxManifestBytes.
func readManifest(path string) ([]byte, error) {
	info, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, err
	case !info.Mode().IsRegular():
		return nil, errors.New("action.json is not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err == nil && len(raw) > maxManifestBytes {
		err = fmt.Errorf("action.json holds more than %d bytes", maxManifestBytes)
	}
	return raw, err
}

// requirement names why a step is required.
func requirement(write bool, field string) string {
	if write {
		return "an R2 (write) plugin action"
	}
	return field + " in action.json"
}

// program finds the executable name (or name.js) in dir and returns how
// to run it, nil when there is neither.
func (l *loader) program(dir, name string) ([]string, error) {
	var found []string
	for _, file := range []string{name, name + ".js"} {
		path := filepath.Join(dir, file)
		info, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !info.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file", file)
		}
		found = append(found, path)
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 2:
		return nil, fmt.Errorf("both %s and %s.js exist: keep one", name, name)
	}
	path := found[0]
	if strings.HasSuffix(path, ".js") {
		if l.node == "" {
			return nil, fmt.Errorf("%s.js needs node, which is not in PATH", name)
		}
		return []string{l.node, path}, nil
	}
	if info, _ := os.Stat(path); info.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("%s is not executable (chmod +x)", name)
	}
	return []string{path}, nil
}

// reserved are the names a plugin may not take: the ids of the other
// sources and the actions of the core (built-in) sources.
type reserved struct {
	sources map[string]bool
	actions map[string]string // action id → "<source>.<action>"
}

func (r reserved) check(name string) error {
	if r.sources[name] {
		return fmt.Errorf("plugin action %q would override source %s: a plugin may not take another source's id", name, name)
	}
	if core, ok := r.actions[name]; ok {
		return fmt.Errorf("plugin action %q would override core action %s: a plugin may not take a core action's name", name, core)
	}
	return nil
}

// allowlist is plugins.command_allowlist: the commands plugins may
// declare, each as words a declared command must start with.
type allowlist [][]string

// shellChars are refused in commands: a command is words run without a
// shell, and these would suggest otherwise.
const shellChars = "'\"`$\\|;&<>(){}*?~!#\n\r\t"

// parseCommand splits a command into its words, refusing shell syntax.
func parseCommand(cmd string) ([]string, error) {
	if i := strings.IndexAny(cmd, shellChars); i >= 0 {
		return nil, fmt.Errorf("command %q: %q is shell syntax; commands are plain words run without a shell", cmd, cmd[i])
	}
	words := strings.Fields(cmd)
	if len(words) == 0 {
		return nil, errors.New("a command is empty")
	}
	return words, nil
}

func newAllowlist(entries []string) (allowlist, error) {
	var out allowlist
	for _, e := range entries {
		words, err := parseCommand(e)
		if err != nil {
			return nil, fmt.Errorf("plugins.command_allowlist: %w", err)
		}
		out = append(out, words)
	}
	return out, nil
}

// allow returns cmd's words when an allowlist entry is a prefix of them
// (word by word), and an error naming cmd otherwise.
func (a allowlist) allow(cmd string) ([]string, error) {
	words, err := parseCommand(cmd)
	if err != nil {
		return nil, err
	}
	for _, entry := range a {
		if len(entry) <= len(words) && equalWords(entry, words[:len(entry)]) {
			return words, nil
		}
	}
	return nil, fmt.Errorf("command %q is not on plugins.command_allowlist", cmd)
}

func equalWords(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
