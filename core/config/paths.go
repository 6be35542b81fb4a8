package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// HomeEnv names the environment variable that overrides the data directory on
// every OS.
const HomeEnv = "HIVECREW_HOME"

// Paths locates everything Hivecrew stores under its data directory.
type Paths struct {
	// Home is the data directory, absolute.
	Home string
}

// DataDir returns the data directory for an OS, given the environment and the
// user's home directory: $HIVECREW_HOME when set; on macOS
// ~/Library/Application Support/Hivecrew; elsewhere $XDG_DATA_HOME/hivecrew,
// with ~/.local/share when XDG_DATA_HOME is unset or not absolute (as the XDG
// base directory specification says).
func DataDir(goos string, getenv func(string) string, userHome string) (string, error) {
	if h := getenv(HomeEnv); h != "" {
		abs, err := filepath.Abs(h)
		if err != nil {
			return "", fmt.Errorf("%s=%q: %w", HomeEnv, h, err)
		}
		return abs, nil
	}
	if userHome == "" {
		return "", errors.New("no home directory: set " + HomeEnv)
	}
	if goos == "darwin" {
		return filepath.Join(userHome, "Library", "Application Support", "Hivecrew"), nil
	}
	base := getenv("XDG_DATA_HOME")
	if !filepath.IsAbs(base) {
		base = filepath.Join(userHome, ".local", "share")
	}
	return filepath.Join(base, "hivecrew"), nil
}

// ResolvePaths returns the paths for this process: override when non-empty
// (a --home flag), else DataDir for this OS and environment.
func ResolvePaths(override string) (Paths, error) {
	if override != "" {
		abs, err := filepath.Abs(override)
		if err != nil {
			return Paths{}, fmt.Errorf("data directory %q: %w", override, err)
		}
		return Paths{Home: abs}, nil
	}
	home, _ := os.UserHomeDir() // an empty home is reported by DataDir when it matters
	dir, err := DataDir(runtime.GOOS, os.Getenv, home)
	if err != nil {
		return Paths{}, err
	}
	return Paths{Home: dir}, nil
}

// Database is the SQLite database file.
func (p Paths) Database() string { return filepath.Join(p.Home, "hivecrew.db") }

// Sessions holds one folder per agent session: events.jsonl, screenshots/, artifacts/.
func (p Paths) Sessions() string { return filepath.Join(p.Home, "Sessions") }

// Session is the trace folder of one agent session.
func (p Paths) Session(id string) string { return filepath.Join(p.Sessions(), id) }

// Tasks holds each task's uploaded input files, by task id.
func (p Paths) Tasks() string { return filepath.Join(p.Home, "Tasks") }

// VMs holds one folder per VM (bundle or sandbox state and its shared folder).
func (p Paths) VMs() string { return filepath.Join(p.Home, "VMs") }

// Templates holds one folder per VM template.
func (p Paths) Templates() string { return filepath.Join(p.Home, "Templates") }

// Logs holds the helper's log files.
func (p Paths) Logs() string { return filepath.Join(p.Home, "Logs") }

// Skills is the skill library: a folder per skill, each with its SKILL.md.
func (p Paths) Skills() string { return filepath.Join(p.Home, "Skills") }

// Presets holds the input files of saved task presets, a folder per preset.
func (p Paths) Presets() string { return filepath.Join(p.Home, "Presets") }

// Evals holds one folder per evaluation run (`hivecrew eval run`), named
// by its run id, with its results.json.
func (p Paths) Evals() string { return filepath.Join(p.Home, "Evals") }

// Provisioning is the JSON file of what VMs are given as they start
// (variables, files, setup commands; secret values are in the secret store).
func (p Paths) Provisioning() string { return filepath.Join(p.Home, "provisioning.json") }

// Socket is the helper's unix socket (mode 0600) for the CLI and the app.
func (p Paths) Socket() string { return filepath.Join(p.Home, "helper.sock") }

// SecretsFile is the 0600 fallback secret store used when no keychain or
// Secret Service collection is available.
func (p Paths) SecretsFile() string { return filepath.Join(p.Home, "secrets.json") }

// Ensure creates the data directory and its subfolders, private to the user
// (0700). Existing folders keep their contents; a data directory that exists
// with wider permissions is narrowed, since it holds traces and secrets.
func (p Paths) Ensure() error {
	if !filepath.IsAbs(p.Home) {
		return fmt.Errorf("data directory %q is not absolute", p.Home)
	}
	for _, dir := range []string{p.Home, p.Sessions(), p.Tasks(), p.VMs(), p.Templates(), p.Logs(), p.Skills()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create data directory: %w", err)
		}
	}
	if err := os.Chmod(p.Home, 0o700); err != nil {
		return fmt.Errorf("restrict data directory: %w", err)
	}
	return nil
}
