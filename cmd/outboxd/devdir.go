package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// devDirFlag names the directory of `outboxd dev`. Other commands read what
// dev leaves there when their own settings are unset.
const devDirFlag = "data-dir"

func addDevDirFlag(fs *pflag.FlagSet) {
	fs.String(devDirFlag, ".outboxd", "the outboxd dev directory: its database and secrets, "+
		"used by other commands when database.url or auth.jwt_secret is unset")
}

// devRunning is what a running `outboxd dev` tells the other commands, in
// running.json in its directory. The file is removed when dev stops.
type devRunning struct {
	PID         int    `json:"pid"`
	DatabaseURL string `json:"database_url,omitempty"`
	// PostgresDataDir is where the embedded cluster's files are, which as
	// root may be outside the dev directory.
	PostgresDataDir string `json:"postgres_data_dir,omitempty"`
	HTTPAddr        string `json:"http_addr,omitempty"`
}

const devRunningFile = "running.json"

// writeDevRunning records r in dir, replacing the file in one step so a
// reader never sees half of it.
func writeDevRunning(dir string, r *devRunning) error {
	b, _ := json.MarshalIndent(r, "", "  ")
	tmp := filepath.Join(dir, devRunningFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, devRunningFile))
}

func removeDevRunning(dir string) {
	_ = os.Remove(filepath.Join(dir, devRunningFile))
}

// readDevRunning returns what the `outboxd dev` running on dir recorded. It
// fails with advice when dev has never run there or is not running now.
func readDevRunning(dir string) (*devRunning, error) {
	b, err := os.ReadFile(filepath.Join(dir, devRunningFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no `outboxd dev` is running with --%s %s", devDirFlag, dir)
	}
	if err != nil {
		return nil, err
	}
	var r devRunning
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, devRunningFile), err)
	}
	if r.PID <= 0 || !processAlive(r.PID) {
		return nil, fmt.Errorf("the `outboxd dev` that used %s (pid %d) is gone; its database runs only while it does: start it again", dir, r.PID)
	}
	return &r, nil
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// devDatabaseURL returns the database of the `outboxd dev` running on the
// command's --data-dir, for commands run without database.url.
func devDatabaseURL(cmd *cobra.Command) (string, error) {
	f := cmd.Flag(devDirFlag)
	if f == nil {
		return "", errors.New("no --" + devDirFlag)
	}
	r, err := readDevRunning(f.Value.String())
	if err != nil {
		return "", err
	}
	return r.DatabaseURL, nil
}
