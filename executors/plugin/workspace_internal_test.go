package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A directory left unreadable is counted (given back to its owner), and
// measuring stops once past the limit.
func TestMeasure_CountsWhatHides(t *testing.T) {
	dir := t.TempDir()
	hidden := filepath.Join(dir, "hidden")
	if err := os.MkdirAll(filepath.Join(hidden, "deeper"), 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(hidden, "deeper", fmt.Sprint(i)), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(hidden, 0); err != nil {
		t.Fatal(err)
	}
	u, err := measure(dir, workspaceUse{bytes: 1 << 30, entries: 100})
	if err != nil || u.entries != 5 {
		t.Fatalf("measure = %+v, %v; want 5 entries (hidden, deeper, three files)", u, err)
	}
	if u, _ := measure(dir, workspaceUse{bytes: 1 << 30, entries: 1}); u.past(workspaceUse{bytes: 1 << 30, entries: 1}) == "" {
		t.Fatalf("measure = %+v; want past a limit of one entry", u)
	}
}

// BenchmarkMeasure is what one measure of a working directory costs, by
// its number of files (watchWorkspace waits four times that between two).
func BenchmarkMeasure(b *testing.B) {
	for _, n := range []int{100, 10000, 50000} {
		b.Run(fmt.Sprint(n, " files"), func(b *testing.B) {
			dir := b.TempDir()
			for i := range n {
				sub := filepath.Join(dir, fmt.Sprint(i%100))
				_ = os.Mkdir(sub, 0o700)
				if err := os.WriteFile(filepath.Join(sub, fmt.Sprint(i)), []byte("x"), 0o600); err != nil {
					b.Fatal(err)
				}
			}
			limit := workspaceUse{bytes: 1 << 40, entries: 1 << 30}
			for b.Loop() {
				if _, err := measure(dir, limit); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
