// memhog tries to hold, all at once, the memory its first argument says,
// in MiB, in the way its second names, 16 MiB at a time, and prints how
// much it held and the error that stopped it (if any). It runs in the
// sandbox in the tests of its memory cap.
package main

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

const chunk = 16 << 20

// ways hold one more chunk each.
var ways = map[string]func() error{
	// heap-like memory, what RLIMIT_DATA counts
	"private": func() error { return mapAndFill(-1, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS) },
	// a shared anonymous mapping (as Python's mmap.mmap(-1, n) makes)
	"shared": func() error { return mapAndFill(-1, unix.MAP_SHARED|unix.MAP_ANONYMOUS) },
	// a private mapping that grows down, as a stack does: the kernel
	// counts it as stack, not data
	"growsdown": func() error { return mapAndFill(-1, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_GROWSDOWN) },
	// a memory file written to, never mapped
	"memfd": func() error {
		fd, err := unix.MemfdCreate("hog", 0)
		if err != nil {
			return fmt.Errorf("memfd_create: %w", err)
		}
		_, err = unix.Write(fd, make([]byte, chunk))
		return err
	},
	// a memory file mapped and closed
	"memfd-mapped": func() error {
		fd, err := unix.MemfdCreate("hog", 0)
		if err != nil {
			return fmt.Errorf("memfd_create: %w", err)
		}
		defer unix.Close(fd)
		if err := unix.Ftruncate(fd, chunk); err != nil {
			return err
		}
		return mapAndFill(fd, unix.MAP_SHARED)
	},
	// a System V shared memory segment, filled and detached
	"sysv-shm": func() error {
		id, err := unix.SysvShmGet(unix.IPC_PRIVATE, chunk, unix.IPC_CREAT|0o600)
		if err != nil {
			return fmt.Errorf("shmget: %w", err)
		}
		b, err := unix.SysvShmAttach(id, 0, 0)
		if err != nil {
			return fmt.Errorf("shmat: %w", err)
		}
		fill(b)
		return unix.SysvShmDetach(b)
	},
	// System V semaphores: kernel memory, 64 bytes each
	"sysv-sem": func() error {
		for i := 0; i < chunk/(64*32000); i++ {
			_, _, errno := unix.Syscall(unix.SYS_SEMGET, unix.IPC_PRIVATE, 32000, unix.IPC_CREAT|0o600)
			if errno != 0 {
				return fmt.Errorf("semget: %w", errno)
			}
		}
		return nil
	},
	// a file of the workspace, mapped shared (as SQLite's WAL index is)
	"file-mapped": func() error {
		f, err := os.CreateTemp(".", "hog")
		if err != nil {
			return err
		}
		defer f.Close()
		if err := f.Truncate(chunk); err != nil {
			return err
		}
		return mapAndFill(int(f.Fd()), unix.MAP_SHARED)
	},
}

func mapAndFill(fd, flags int) error {
	b, err := unix.Mmap(fd, 0, chunk, unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		return fmt.Errorf("mmap: %w", err)
	}
	fill(b)
	return nil
}

// fill writes to every page of b.
func fill(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
}

func main() {
	mib, _ := strconv.Atoi(os.Args[1])
	hold := ways[os.Args[2]]
	held := 0
	var err error
	for held < mib<<20 && err == nil {
		if err = hold(); err == nil {
			held += chunk
		}
	}
	fmt.Println(held>>20, err)
}
