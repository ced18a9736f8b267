//go:build !linux

package plugin

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// measure adds up what dir holds, beneath it, and stops as soon as that
// passes max. Without Linux there is no sandbox: a plugin that runs
// unsandboxed may write anywhere its user may, so this counts only the
// working directory, by its paths and the files' sizes.
func measure(dir string, max workspaceUse) (workspaceUse, error) {
	var u workspaceUse
	dirs := []string{dir}
	for len(dirs) > 0 {
		d := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		f, err := os.Open(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return u, err
		}
		for {
			entries, err := f.ReadDir(256)
			for _, e := range entries {
				info, err := e.Info()
				if err != nil {
					continue // removed since it was listed
				}
				u.entries++
				u.bytes += info.Size()
				if e.IsDir() {
					dirs = append(dirs, filepath.Join(d, e.Name()))
				}
			}
			if u.past(max) != "" || err == io.EOF || (err == nil && len(entries) == 0) {
				break
			}
			if err != nil {
				f.Close()
				return u, err
			}
		}
		f.Close()
		if u.past(max) != "" {
			return u, nil
		}
	}
	return u, nil
}

// unlock gives every directory beneath dir, and dir, its owner's read,
// write and search permission, by their paths.
func unlock(dir string) {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o700) // before WalkDir reads it
		}
		return nil
	})
}
