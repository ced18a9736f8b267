package plugin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A directory left unreadable is counted (given back to its owner), and
// measuring stops once past the limit.
func TestMeasure_CountsWhatHides(t *testing.T) {
	dir := t.TempDir()
	t.Cleanup(func() {
		if err := removeWorkspace(dir); err != nil {
			t.Error(err)
		}
	})
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

// A directory is measured only as the one its parent's listing showed: a
// plugin that puts a link or another directory in its place meanwhile
// (to point the count elsewhere, or hide its files) ends the measure.
func TestOpenListed_RefusesWhatReplacedTheListedDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a")
	listed := func() (uint64, uint64) {
		t.Helper()
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		info, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		st := info.Sys().(*syscall.Stat_t)
		return uint64(st.Dev), uint64(st.Ino)
	}
	dev, ino := listed()
	fd, err := openListed(path, dev, ino)
	if err != nil {
		t.Fatalf("the listed directory: %v", err)
	}
	syscall.Close(fd)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}

	// Each replacement is made before the listed directory is removed, so
	// that it cannot have its inode.
	elsewhere, other := t.TempDir(), filepath.Join(dir, "b")
	for name, replace := range map[string]func() error{
		"a link":            func() error { return os.Symlink(elsewhere, other) },
		"another directory": func() error { return os.Mkdir(other, 0o700) },
		"a file":            func() error { return os.WriteFile(other, nil, 0o600) },
	} {
		dev, ino := listed()
		if err := errors.Join(replace(), os.Remove(path), os.Rename(other, path)); err != nil {
			t.Fatal(err)
		}
		if fd, err := openListed(path, dev, ino); err == nil || errors.Is(err, fs.ErrNotExist) {
			syscall.Close(fd)
			t.Errorf("%s in the listed directory's place: %v, want a refusal", name, err)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	dev, ino = listed()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := openListed(path, dev, ino); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a removed directory: %v, want ErrNotExist (skipped)", err)
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
