package plugin

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// measure adds up what dir holds, beneath it, and stops as soon as that
// passes max. The plugin's processes may be changing it meanwhile, and
// must not be able to hide anything from the count or to point it
// elsewhere:
//   - each directory is opened only as the directory its parent's listing
//     showed (the same device and inode, never through a symbolic link):
//     one replaced since then by a link or by another directory ends the
//     measure with an error, which stops the run; one removed is skipped;
//   - a directory the plugin took its own read or search permission from
//     gets it back first, through the descriptor (as root nothing needs
//     it), so its files are counted.
func measure(dir string, max workspaceUse) (workspaceUse, error) {
	var u workspaceUse
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return u, &fs.PathError{Op: "lstat", Path: dir, Err: err}
	}
	type listed struct {
		path     string
		dev, ino uint64
	}
	dirs := []listed{{dir, uint64(st.Dev), uint64(st.Ino)}}
	for len(dirs) > 0 {
		d := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		f, err := openListed(d.path, d.dev, d.ino)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since it was listed
		}
		if err != nil {
			return u, err
		}
		for {
			entries, err := f.ReadDir(256)
			for _, e := range entries {
				switch err := unix.Fstatat(int(f.Fd()), e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); {
				case errors.Is(err, unix.ENOENT):
					continue // removed since it was listed
				case err != nil:
					f.Close()
					return u, &fs.PathError{Op: "stat", Path: filepath.Join(d.path, e.Name()), Err: err}
				}
				u.entries++
				u.bytes += st.Blocks * 512
				if st.Mode&unix.S_IFMT == unix.S_IFDIR {
					dirs = append(dirs, listed{filepath.Join(d.path, e.Name()), uint64(st.Dev), uint64(st.Ino)})
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

// openListed opens for listing the directory at path that a listing
// showed as device dev, inode ino: not when path now ends in a symbolic
// link or names another file. Without read or search permission on it
// (the plugin's user, not root), it gets them back first, through the
// descriptor, so that nothing put at path meanwhile is changed.
func openListed(path string, dev, ino uint64) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if uint64(st.Dev) != dev || uint64(st.Ino) != ino {
		return nil, fmt.Errorf("%s was replaced while it was measured", path)
	}
	if st.Mode&0o500 != 0o500 && os.Geteuid() != 0 {
		if err := unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), st.Mode&0o7777|0o500); err != nil {
			return nil, &fs.PathError{Op: "chmod", Path: path, Err: err}
		}
	}
	rfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(rfd), path), nil
}
