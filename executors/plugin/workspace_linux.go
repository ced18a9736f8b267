package plugin

import (
	"errors"
	"fmt"
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
	buf := make([]byte, 32<<10)
	var names []string
	for len(dirs) > 0 {
		d := dirs[len(dirs)-1]
		dirs = dirs[:len(dirs)-1]
		fd, err := openListed(d.path, d.dev, d.ino)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since it was listed
		}
		if err != nil {
			return u, err
		}
		err = func() error {
			defer unix.Close(fd)
			for u.past(max) == "" {
				n, err := unix.Getdents(fd, buf)
				if errors.Is(err, unix.EINTR) {
					continue
				}
				if err != nil {
					return &fs.PathError{Op: "getdents", Path: d.path, Err: err}
				}
				if n <= 0 {
					return nil
				}
				_, _, names = unix.ParseDirent(buf[:n], -1, names[:0])
				for _, name := range names {
					switch err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
					case errors.Is(err, unix.ENOENT):
						continue // removed since it was listed
					case err != nil:
						return &fs.PathError{Op: "stat", Path: filepath.Join(d.path, name), Err: err}
					}
					u.entries++
					u.bytes += st.Blocks * 512
					if st.Mode&unix.S_IFMT == unix.S_IFDIR {
						dirs = append(dirs, listed{filepath.Join(d.path, name), uint64(st.Dev), uint64(st.Ino)})
					}
				}
			}
			return nil
		}()
		if err != nil || u.past(max) != "" {
			return u, err
		}
	}
	return u, nil
}

// openListed opens for listing, and returns the descriptor of, the
// directory at path that a listing showed as device dev, inode ino: not
// when path now ends in a symbolic link or names another file. Without read or search permission on it
// (the plugin's user, not root), it gets them back first, through the
// descriptor, so that nothing put at path meanwhile is changed.
func openListed(path string, dev, ino uint64) (int, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return -1, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if uint64(st.Dev) != dev || uint64(st.Ino) != ino {
		return -1, fmt.Errorf("%s was replaced while it was measured", path)
	}
	if st.Mode&0o500 != 0o500 && os.Geteuid() != 0 {
		if err := unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), st.Mode&0o7777|0o500); err != nil {
			return -1, &fs.PathError{Op: "chmod", Path: path, Err: err}
		}
	}
	rfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return rfd, nil
}

// unlock gives every directory beneath dir, and dir, its owner's read,
// write and search permission. Each is opened relative to its parent,
// never by its whole path: a plugin may nest its directories past the
// longest path the system opens (PATH_MAX), which left the deepest ones
// locked and the workspace on disk for good. It runs once the plugin's
// processes are gone, and follows no link.
func unlock(dir string) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	unlockAt(fd)
}

// unlockAt unlocks the directory fd (O_PATH) and what is beneath it, and
// closes fd.
func unlockAt(fd int) {
	defer unix.Close(fd)
	_ = unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), 0o700)
	rfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	var dirs []string
	var st unix.Stat_t
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(rfd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			break
		}
		_, _, names := unix.ParseDirent(buf[:n], -1, nil)
		for _, name := range names {
			if unix.Fstatat(rfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				dirs = append(dirs, name)
			}
		}
	}
	unix.Close(rfd)
	for _, name := range dirs {
		if cfd, err := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			unlockAt(cfd)
		}
	}
}
