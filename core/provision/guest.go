package provision

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/wire"
)

// StageDir is the hidden folder of a VM's shared folder its files are
// staged in (as "1", "2", … in the plan's order) until the guest moves them
// into place.
const StageDir = ".hivecrew-provision"

// Stage copies the plan's files into shared/StageDir, owned like the
// shared folder. A source that is missing, not a regular file or over
// MaxFileBytes is an error that names it.
func Stage(p Plan, shared string) error {
	if len(p.Files) == 0 {
		return nil
	}
	ins := make([]files.Input, len(p.Files))
	for i, f := range p.Files {
		fi, err := os.Stat(f.Source)
		switch {
		case err != nil:
			return fmt.Errorf("the file for %s: %w", f.GuestPath, err)
		case !fi.Mode().IsRegular():
			return fmt.Errorf("the file for %s: %s is not a regular file", f.GuestPath, f.Source)
		case fi.Size() > MaxFileBytes:
			return fmt.Errorf("the file for %s: %s is over %d MiB", f.GuestPath, f.Source, MaxFileBytes>>20)
		}
		ins[i] = files.Input{Name: strconv.Itoa(i + 1), Path: f.Source}
	}
	return files.CopyInto(shared, StageDir, ins)
}

// Guest commands of provisioning. Their arguments come in run_shell's env
// (never spliced into the command), so no path or value is ever parsed as
// shell.
const (
	// EnvFileVar carries the contents of ~/.hivecrew-env.sh to
	// InstallEnvCommand.
	EnvFileVar = "HIVECREW_PROVISION_ENV"
	// InstallEnvCommand writes ~/.hivecrew-env.sh (0600) and has the
	// shells' profiles source it, so terminals the agent opens have the
	// variables too.
	InstallEnvCommand = `umask 077
f="$HOME/.hivecrew-env.sh"
printf '%s' "$HIVECREW_PROVISION_ENV" > "$f" && chmod 600 "$f" || exit 1
for p in .profile .bashrc .zshenv; do
  grep -qsF .hivecrew-env.sh "$HOME/$p" && continue
  printf '\n[ -r "$HOME/.hivecrew-env.sh" ] && . "$HOME/.hivecrew-env.sh"\n' >> "$HOME/$p" || exit 1
done`
	// The staged file (relative to the shared folder), its destination
	// and its mode, for PlaceFileCommand.
	SourceVar = "HIVECREW_PROVISION_SRC"
	DestVar   = "HIVECREW_PROVISION_DEST"
	ModeVar   = "HIVECREW_PROVISION_MODE"
	// PlaceFileCommand moves a staged file to its destination ("~/"
	// meaning the guest user's home), making its folder.
	PlaceFileCommand = `dest="$HIVECREW_PROVISION_DEST"
case "$dest" in "~/"*) dest="$HOME/${dest#??}" ;; esac
if [ -d "$dest" ]; then echo "$dest is a folder" >&2; exit 1; fi
mkdir -p -- "$(dirname -- "$dest")" && mv -f -- "$HIVECREW_SHARED/$HIVECREW_PROVISION_SRC" "$dest" && chmod -- "$HIVECREW_PROVISION_MODE" "$dest"`
	// ClearStageCommand removes the staging folder.
	ClearStageCommand = `rm -rf -- "$HIVECREW_SHARED/` + StageDir + `"`
)

// EnvFile is the contents of the guest's ~/.hivecrew-env.sh: an export of
// each variable, its value single-quoted.
func EnvFile(p Plan) string {
	var b strings.Builder
	b.WriteString("# Written by Hivecrew: the provisioned environment variables.\n")
	for _, v := range p.Env {
		b.WriteString("export " + v.Name + "='" + strings.ReplaceAll(v.Value, "'", `'\''`) + "'\n")
	}
	return b.String()
}

// StagedName is the staged file of the plan's i-th file, relative to the
// shared folder.
func StagedName(i int) string { return StageDir + "/" + strconv.Itoa(i+1) }

func unmarshal(b []byte, c *wire.Provisioning) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(c)
}

func marshal(c wire.Provisioning) []byte {
	b, _ := json.MarshalIndent(c, "", "  ")
	return append(b, '\n')
}

// writeFile replaces path (mode 0600) atomically: a synced temporary file
// renamed over it.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".provisioning-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
