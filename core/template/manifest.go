package template

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/templates"
)

// ManifestVersion is the manifest format this build reads.
const ManifestVersion = 1

// ManifestFile is a template folder's manifest.
const ManifestFile = "template.yaml"

// Manifest describes how a template is built: what from, its default
// resources and its provisioning. It is one folder's template.yaml.
type Manifest struct {
	// ManifestVersion is the format (ManifestVersion).
	ManifestVersion int `yaml:"manifestVersion"`
	// Name is the folder's name and the prefix of template ids built from it.
	Name string `yaml:"name"`
	// Version is the template's own revision.
	Version     int       `yaml:"version"`
	DisplayName string    `yaml:"displayName"`
	Description string    `yaml:"description"`
	OS          string    `yaml:"os"`   // "linux" or "macos"
	Kind        string    `yaml:"kind"` // "rootfs" or "macos"
	Resources   Resources `yaml:"resources"`
	RootFS      *RootFS   `yaml:"rootfs,omitempty"`
	MacOS       *MacOS    `yaml:"macos,omitempty"`

	// dir is the manifest's folder, for the scripts it names.
	dir fs.FS
}

// Resources are the defaults of new VMs; zero means the user's settings.
type Resources struct {
	CPUs     int `yaml:"cpus"`
	MemoryMB int `yaml:"memoryMB"`
	DiskGB   int `yaml:"diskGB"`
}

// RootFS builds a Debian root filesystem (kind rootfs).
type RootFS struct {
	Distribution string   `yaml:"distribution"` // "debian"
	Suite        string   `yaml:"suite"`
	Mirror       string   `yaml:"mirror"`
	Variant      string   `yaml:"variant"`
	Components   []string `yaml:"components"`
	// Sources are more APT source lines; {mirror} and {suite} are replaced.
	Sources []string `yaml:"sources"`
	// Packages is the minimal set, always installed.
	Packages []string `yaml:"packages"`
	// Full is added by the full build.
	Full []string `yaml:"full"`
	// Extras are optional sets, by name.
	Extras map[string][]string `yaml:"extras"`
	// GuestWritable are folders given to the guest's user.
	GuestWritable []string `yaml:"guestWritable"`
	// Provision names scripts of the manifest's folder run as root inside
	// the new system, in order.
	Provision []string `yaml:"provision"`
	// AgentPath is where the guest agent is installed.
	AgentPath string `yaml:"agentPath"`
}

// MacOS builds a macOS VM bundle (kind macos).
type MacOS struct {
	// RestoreImage is "latest", an https URL or an absolute .ipsw path.
	RestoreImage   string  `yaml:"restoreImage"`
	MinimumVersion string  `yaml:"minimumVersion"`
	Display        Display `yaml:"display"`
	SharedFolder   string  `yaml:"sharedFolder"`
	AutoLogin      struct {
		User string `yaml:"user"`
	} `yaml:"autoLogin"`
	Agent struct {
		Path        string   `yaml:"path"`
		LaunchAgent string   `yaml:"launchAgent"`
		Permissions []string `yaml:"permissions"`
	} `yaml:"agent"`
	Apps  []App  `yaml:"apps"`
	Setup []Step `yaml:"setup"`
}

// Display is a guest screen in points.
type Display struct {
	Width  int `yaml:"width"`
	Height int `yaml:"height"`
}

// App is an application installed during a macOS template's setup.
type App struct {
	Name     string `yaml:"name"`
	URL      string `yaml:"url"`
	Optional bool   `yaml:"optional"`
}

// Step is one step of a guided setup.
type Step struct {
	Title        string `yaml:"title"`
	Instructions string `yaml:"instructions"`
}

var (
	namePattern    = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	packagePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)
	suitePattern   = regexp.MustCompile(`^[a-z][a-z0-9-]{1,30}$`)
	scriptPattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*\.sh$`)
	versionPattern = regexp.MustCompile(`^[0-9]+(\.[0-9]+){0,2}$`)
)

// macOSPermissions are the permissions a macOS manifest may ask for.
var macOSPermissions = []string{"screenRecording", "accessibility"}

// Parse reads a manifest strictly (unknown fields are errors) and checks
// it. dir is its folder (for the scripts it names); nil skips that check.
func Parse(data []byte, dir fs.FS) (*Manifest, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, errdefs.Invalidf("template manifest: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	m.dir = dir
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate returns every problem of the manifest as one error of class
// invalid, each naming its field.
func (m *Manifest) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if m.ManifestVersion != ManifestVersion {
		bad("manifestVersion is %d; this Hivecrew reads %d", m.ManifestVersion, ManifestVersion)
	}
	if !namePattern.MatchString(m.Name) {
		bad("name %q: lower-case letters, digits and dashes", m.Name)
	}
	if m.Version < 1 {
		bad("version must be 1 or more")
	}
	if strings.TrimSpace(m.DisplayName) == "" {
		bad("displayName is required")
	}
	r := m.Resources
	if r.CPUs < 0 || r.CPUs > 64 {
		bad("resources.cpus must be between 0 (default) and 64")
	}
	if r.MemoryMB != 0 && (r.MemoryMB < 512 || r.MemoryMB > 1<<20) {
		bad("resources.memoryMB must be 0 (default) or between 512 and %d", 1<<20)
	}
	if r.DiskGB != 0 && (r.DiskGB < 8 || r.DiskGB > 8192) {
		bad("resources.diskGB must be 0 (default) or between 8 and 8192")
	}
	switch {
	case m.OS == "linux" && m.Kind == "rootfs":
		if m.RootFS == nil || m.MacOS != nil {
			bad("a rootfs template needs a rootfs section and no macos section")
		} else {
			errs = append(errs, m.RootFS.validate(m.dir)...)
		}
	case m.OS == "macos" && m.Kind == "macos":
		if m.MacOS == nil || m.RootFS != nil {
			bad("a macos template needs a macos section and no rootfs section")
		} else {
			errs = append(errs, m.MacOS.validate(r)...)
		}
	default:
		bad("os %q with kind %q: want linux with rootfs, or macos with macos", m.OS, m.Kind)
	}
	if len(errs) == 0 {
		return nil
	}
	return errdefs.Invalidf("template manifest %s: %v", or(m.Name, "(unnamed)"), errors.Join(errs...))
}

func (r *RootFS) validate(dir fs.FS) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("rootfs."+format, args...)) }
	if r.Distribution != "debian" {
		bad("distribution %q: only debian is supported", r.Distribution)
	}
	if !suitePattern.MatchString(r.Suite) {
		bad("suite %q is not a Debian suite name", r.Suite)
	}
	if err := checkMirror(r.Mirror); err != nil {
		bad("mirror: %v", err)
	}
	switch r.Variant {
	case "", "minbase", "buildd":
	default:
		bad("variant %q: minbase or buildd", r.Variant)
	}
	for _, c := range r.Components {
		if !suitePattern.MatchString(c) {
			bad("components: %q is not a component name", c)
		}
	}
	for _, s := range r.Sources {
		if f := strings.Fields(s); len(f) < 3 || f[0] != "deb" || strings.ContainsAny(s, "\n\r") {
			bad("sources: %q is not a one-line \"deb URL SUITE COMPONENT...\" entry", s)
		}
	}
	if len(r.Packages) == 0 {
		bad("packages: the minimal set is empty")
	}
	check := func(set string, pkgs []string) {
		for _, p := range pkgs {
			if !packagePattern.MatchString(p) {
				bad("%s: %q is not a Debian package name", set, p)
			}
		}
	}
	check("packages", r.Packages)
	check("full", r.Full)
	for _, name := range sortedKeys(r.Extras) {
		if !namePattern.MatchString(name) || name == "full" {
			bad("extras: %q is not a valid set name", name)
		}
		check("extras."+name, r.Extras[name])
	}
	for _, g := range r.GuestWritable {
		if err := checkGuestPath(g); err != nil {
			bad("guestWritable: %v", err)
		}
	}
	for _, s := range r.Provision {
		if !scriptPattern.MatchString(s) {
			bad("provision: %q must be a .sh file of the template's folder", s)
		} else if dir != nil {
			if fi, err := fs.Stat(dir, s); err != nil || !fi.Mode().IsRegular() {
				bad("provision: %s is not in the template's folder", s)
			}
		}
	}
	if r.AgentPath == "" {
		bad("agentPath is required")
	} else if err := checkGuestPath(r.AgentPath); err != nil {
		bad("agentPath: %v", err)
	}
	return errs
}

// checkGuestPath accepts an absolute, clean path of the guest's system
// outside the kernel's folders and those every sandbox covers with its own
// (temporary folders, homes, mount points).
func checkGuestPath(p string) error {
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
		return fmt.Errorf("%q must be an absolute, clean path below /", p)
	}
	for _, no := range []string{"/proc", "/sys", "/dev", "/run", "/tmp", "/var/tmp", "/home", "/root", "/mnt", "/media"} {
		if p == no || strings.HasPrefix(p, no+"/") {
			return fmt.Errorf("%q is inside %s, which the sandbox replaces", p, no)
		}
	}
	return nil
}

func checkMirror(m string) error {
	u, err := url.Parse(m)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q is not an http(s) URL", m)
	}
	return nil
}

func (m *MacOS) validate(r Resources) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("macos."+format, args...)) }
	if err := CheckRestoreImage(m.RestoreImage); err != nil {
		bad("restoreImage: %v", err)
	}
	if m.MinimumVersion != "" && !versionPattern.MatchString(m.MinimumVersion) {
		bad("minimumVersion %q is not a version like 15.0", m.MinimumVersion)
	}
	if m.Display.Width < 640 || m.Display.Height < 480 {
		bad("display %dx%d is too small (640x480 at least)", m.Display.Width, m.Display.Height)
	}
	if !strings.HasPrefix(m.SharedFolder, "/Volumes/") {
		bad("sharedFolder %q: the VirtioFS automount lives under /Volumes/", m.SharedFolder)
	}
	if !namePattern.MatchString(m.AutoLogin.User) {
		bad("autoLogin.user %q is not a short account name", m.AutoLogin.User)
	}
	if !path.IsAbs(m.Agent.Path) {
		bad("agent.path %q must be absolute", m.Agent.Path)
	}
	if !strings.HasSuffix(m.Agent.LaunchAgent, ".plist") {
		bad("agent.launchAgent %q must name a .plist", m.Agent.LaunchAgent)
	}
	for _, p := range m.Agent.Permissions {
		if !slices.Contains(macOSPermissions, p) {
			bad("agent.permissions: %q (known: %s)", p, strings.Join(macOSPermissions, ", "))
		}
	}
	for i, a := range m.Apps {
		if strings.TrimSpace(a.Name) == "" {
			bad("apps[%d]: a name is required", i)
		}
		if a.URL != "" {
			if u, err := url.Parse(a.URL); err != nil || u.Scheme != "https" {
				bad("apps[%d] (%s): url must be https", i, a.Name)
			}
		}
	}
	if len(m.Setup) == 0 {
		bad("setup: the guided setup has no steps")
	}
	for i, s := range m.Setup {
		if strings.TrimSpace(s.Title) == "" || strings.TrimSpace(s.Instructions) == "" {
			bad("setup[%d]: title and instructions are required", i)
		}
	}
	if r.MemoryMB != 0 && r.MemoryMB < 2048 {
		bad("resources.memoryMB: macOS guests need at least 2048 MB")
	}
	return errs
}

// CheckRestoreImage accepts "latest", an https URL or an absolute path to
// an .ipsw file.
func CheckRestoreImage(s string) error {
	switch {
	case s == "latest":
		return nil
	case strings.HasPrefix(s, "https://"):
		if u, err := url.Parse(s); err != nil || u.Host == "" {
			return fmt.Errorf("%q is not a URL", s)
		}
		return nil
	case filepath.IsAbs(s) && strings.HasSuffix(strings.ToLower(s), ".ipsw"):
		return nil
	}
	return fmt.Errorf("%q: want latest, an https URL or the absolute path of an .ipsw file", s)
}

// Script returns a provisioning script of the manifest's folder.
func (m *Manifest) Script(name string) ([]byte, error) {
	if m.dir == nil || !slices.Contains(m.RootFS.Provision, name) {
		return nil, errdefs.NotFoundf("template %s has no script %s", m.Name, name)
	}
	return fs.ReadFile(m.dir, name)
}

// Options are the choices of one build of a rootfs manifest.
type Options struct {
	// Full adds the manifest's full set.
	Full bool
	// Extras names optional sets.
	Extras []string
}

// Flags names the options ("full", then the extras, sorted), as they are
// recorded with a template.
func (o Options) Flags() []string {
	var out []string
	if o.Full {
		out = append(out, "full")
	}
	ex := slices.Clone(o.Extras)
	sort.Strings(ex)
	return append(out, slices.Compact(ex)...)
}

// PackageSet returns the packages of a build, sorted and without
// duplicates; an unknown extra is an error of class invalid.
func (r *RootFS) PackageSet(o Options) ([]string, error) {
	set := slices.Clone(r.Packages)
	if o.Full {
		set = append(set, r.Full...)
	}
	for _, e := range o.Extras {
		pkgs, ok := r.Extras[e]
		if !ok {
			known := sortedKeys(r.Extras)
			return nil, errdefs.Invalidf("no optional set %q (this template has: %s)", e, strings.Join(or2(known, []string{"none"}), ", "))
		}
		set = append(set, pkgs...)
	}
	sort.Strings(set)
	return slices.Compact(set), nil
}

// SourceLines returns the APT sources of the finished system.
func (r *RootFS) SourceLines(mirror string) []string {
	comps := r.Components
	if len(comps) == 0 {
		comps = []string{"main"}
	}
	lines := []string{fmt.Sprintf("deb %s %s %s", mirror, r.Suite, strings.Join(comps, " "))}
	for _, s := range r.Sources {
		lines = append(lines, strings.NewReplacer("{mirror}", mirror, "{suite}", r.Suite).Replace(s))
	}
	return lines
}

// Builtin returns a manifest shipped with Hivecrew (a folder of templates/).
func Builtin(name string) (*Manifest, error) {
	if !namePattern.MatchString(name) {
		return nil, errdefs.Invalidf("template manifest name %q", name)
	}
	sub, err := fs.Sub(templates.FS, name)
	if err != nil {
		return nil, err
	}
	data, err := fs.ReadFile(sub, ManifestFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errdefs.NotFoundf("no template manifest %q (built in: %s)", name, strings.Join(BuiltinNames(), ", "))
	}
	if err != nil {
		return nil, err
	}
	return Parse(data, sub)
}

// BuiltinNames lists the manifests shipped with Hivecrew.
func BuiltinNames() []string {
	ents, _ := fs.ReadDir(templates.FS, ".")
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// LoadDir reads the manifest of a template folder on disk.
func LoadDir(dir string) (*Manifest, error) {
	if !filepath.IsAbs(dir) {
		return nil, errdefs.Invalidf("template folder %q must be an absolute path", dir)
	}
	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errdefs.NotFoundf("%s has no %s", dir, ManifestFile)
		}
		return nil, err
	}
	return Parse(data, os.DirFS(dir))
}

// Resolve returns a built-in manifest by name, or the manifest of an
// absolute folder.
func Resolve(nameOrDir string) (*Manifest, error) {
	if filepath.IsAbs(nameOrDir) {
		return LoadDir(nameOrDir)
	}
	return Builtin(nameOrDir)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func or2(a, b []string) []string {
	if len(a) > 0 {
		return a
	}
	return b
}
