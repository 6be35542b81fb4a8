package tmplarchive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/hivecrew/hivecrew/core/errdefs"
)

// Format is the archive format this build writes and reads.
const Format = 1

// Entry names of an archive, in order.
const (
	ManifestName  = "manifest.json"
	DiskName      = "disk.tar"
	ChecksumsName = "SHA256SUMS"
)

// Bounds of what an archive may declare.
const (
	// MaxManifestBytes bounds manifest.json.
	MaxManifestBytes = 64 << 10
	// MaxDiskBytes bounds disk.tar (4 TiB).
	MaxDiskBytes = 4 << 40
	// maxChecksumBytes bounds SHA256SUMS.
	maxChecksumBytes = 4 << 10
	// maxEntries bounds the entries of disk.tar.
	maxEntries = 4 << 20
	// maxNameBytes bounds an entry's name and a link's target.
	maxNameBytes = 4096
)

// Kinds of template an archive carries.
const (
	KindRootFS = "rootfs"
	KindMacOS  = "macos"
)

// BundleFile is a file of a macOS bundle an archive may carry; Required
// says it must be there.
type BundleFile struct {
	Name     string
	Required bool
}

// BundleFiles are the files of a macOS bundle an archive carries, in
// their order.
func BundleFiles() []BundleFile {
	return []BundleFile{{"config.json", true}, {"hardware-model.bin", true}, {"machine-id.bin", false}, {"aux.img", true}, {"disk.img", true}}
}

// Manifest is manifest.json: what the archive's template is.
type Manifest struct {
	Format      int    `json:"format"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	OS          string `json:"os"`
	Kind        string `json:"kind"`
	CPUCount    int    `json:"cpuCount,omitempty"`
	MemoryMB    int    `json:"memoryMB,omitempty"`
	DiskGB      int    `json:"diskGB,omitempty"`
	// AgentVersion is the guest agent installed in the template, as the
	// exporting helper recorded it.
	AgentVersion string `json:"agentVersion,omitempty"`
	// AgentPath is where a Linux template's guest agent is installed.
	AgentPath string `json:"agentPath,omitempty"`
	// Manifest is the built-in manifest the template was built from
	// ("linux-desktop"), ManifestVersion its revision, Options the build's
	// choices; Version the template's own revision.
	Manifest        string   `json:"manifest,omitempty"`
	ManifestVersion int      `json:"manifestVersion,omitempty"`
	Options         []string `json:"options,omitempty"`
	Version         int      `json:"version,omitempty"`
	// ExportedBy is the exporting helper's version.
	ExportedBy string    `json:"exportedBy,omitempty"`
	ExportedAt time.Time `json:"exportedAt"`
	// DiskBytes is the size of disk.tar.
	DiskBytes int64 `json:"diskBytes"`
}

var (
	manifestPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	versionPattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$`)
)

// decodeManifest reads manifest.json strictly and checks it.
func decodeManifest(data []byte) (Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, errdefs.Invalidf("the archive's %s: %v", ManifestName, err)
	}
	if dec.More() {
		return Manifest{}, errdefs.Invalidf("the archive's %s has more than one JSON value", ManifestName)
	}
	if err := m.Check(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// Check returns every problem of a manifest as one error of class invalid.
func (m Manifest) Check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if m.Format != Format {
		bad("format is %d; this Hivecrew reads %d", m.Format, Format)
	}
	if err := CheckName(m.Name); err != nil {
		bad("%v", err)
	}
	if len(m.Description) > 2000 || !printable(m.Description, true) {
		bad("description: at most 2000 printable characters")
	}
	switch {
	case m.OS == "linux" && m.Kind == KindRootFS, m.OS == "macos" && m.Kind == KindMacOS:
	default:
		bad("os %q with kind %q: want linux with rootfs, or macos with macos", m.OS, m.Kind)
	}
	if m.CPUCount < 0 || m.CPUCount > 64 {
		bad("cpuCount must be 0 (default) to 64")
	}
	if m.MemoryMB != 0 && (m.MemoryMB < 512 || m.MemoryMB > 1<<20) {
		bad("memoryMB must be 0 (default) or 512 to %d", 1<<20)
	}
	if m.DiskGB != 0 && (m.DiskGB < 8 || m.DiskGB > 8192) {
		bad("diskGB must be 0 (default) or 8 to 8192")
	}
	if m.AgentVersion != "" && !versionPattern.MatchString(m.AgentVersion) {
		bad("agentVersion %q is not a version", clip(m.AgentVersion))
	}
	if m.AgentPath != "" && (m.Kind != KindRootFS || !path.IsAbs(m.AgentPath) || path.Clean(m.AgentPath) != m.AgentPath ||
		m.AgentPath == "/" || len(m.AgentPath) > 1024 || !printable(m.AgentPath, false)) {
		bad("agentPath %q: an absolute, clean path of a Linux template", clip(m.AgentPath))
	}
	if m.Manifest != "" && !manifestPattern.MatchString(m.Manifest) {
		bad("manifest %q is not a built-in manifest's name", clip(m.Manifest))
	}
	if m.ManifestVersion < 0 || m.Version < 0 || len(m.Options) > 32 {
		bad("manifestVersion, version and options are out of range")
	}
	for _, o := range m.Options {
		if !manifestPattern.MatchString(o) {
			bad("options: %q is not an option name", clip(o))
		}
	}
	if m.ExportedBy != "" && !versionPattern.MatchString(m.ExportedBy) {
		bad("exportedBy %q is not a version", clip(m.ExportedBy))
	}
	if m.DiskBytes <= 0 || m.DiskBytes > MaxDiskBytes {
		bad("diskBytes %d: want 1 to %d", m.DiskBytes, int64(MaxDiskBytes))
	}
	if len(errs) == 0 {
		return nil
	}
	return errdefs.Invalidf("the archive's %s: %v", ManifestName, errors.Join(errs...))
}

// CheckName accepts a template name: 1 to 200 printable characters, not
// only spaces.
func CheckName(name string) error {
	if n := strings.TrimSpace(name); n == "" || n != name || len(name) > 200 || !printable(name, false) {
		return errdefs.Invalidf("template name %q: 1 to 200 printable characters, no spaces around them", clip(name))
	}
	return nil
}

// printable reports whether s is valid UTF-8 of printable characters
// (newlines and tabs too when multiline).
func printable(s string, multiline bool) bool {
	for _, r := range s {
		if r == unicode.ReplacementChar || (!unicode.IsPrint(r) && !(multiline && (r == '\n' || r == '\t'))) {
			return false
		}
	}
	return true
}

// clip shortens s for a message and makes it printable.
func clip(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, s)
}
