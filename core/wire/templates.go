package wire

import "time"

// Template is a VM template.
type Template struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	IsDefault   bool   `json:"isDefault"`
	CPUCount    int    `json:"cpuCount,omitempty"`
	MemoryMB    int    `json:"memoryMB,omitempty"`
	DiskGB      int    `json:"diskGB,omitempty"`
	// MemoryGB and DiskSizeGB are MemoryMB and DiskGB under the Swift
	// server's names and units (whole GB, memory rounded up).
	MemoryGB     int       `json:"memoryGB,omitempty"`
	DiskSizeGB   int       `json:"diskSizeGB,omitempty"`
	MacOSVersion string    `json:"macOSVersion,omitempty"`
	OS           string    `json:"os"`
	Kind         string    `json:"kind"`
	AgentVersion string    `json:"agentVersion,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	// Extensions: the build (see templates.go).
	TemplateBuild
}

// TemplateList is the answer of GET /templates.
type TemplateList struct {
	Templates         []Template `json:"templates"`
	DefaultTemplateID string     `json:"defaultTemplateId,omitempty"`
}

// TemplateBuild is what GET /templates adds to a template (extension).
type TemplateBuild struct {
	// Status is "ready", "building", "setup" (macOS: waiting for the
	// guided setup) or "failed"; StatusReason says why a build failed.
	Status       string `json:"status"`
	StatusReason string `json:"statusReason,omitempty"`
	// Progress is set while the template builds.
	Progress *TemplateProgress `json:"progress,omitempty"`
	// Manifest, ManifestVersion and Options say what it was built from.
	Manifest        string   `json:"manifest,omitempty"`
	ManifestVersion int      `json:"manifestVersion,omitempty"`
	Options         []string `json:"options,omitempty"`
	// ParentID and SourceVMID: a sealed template's template and VM.
	ParentID   string `json:"parentId,omitempty"`
	SourceVMID string `json:"sourceVmId,omitempty"`
	// AgentOutdated flags a template built with a guest agent older than
	// the helper's.
	AgentOutdated bool       `json:"agentOutdated,omitempty"`
	UpdatedAt     *time.Time `json:"updatedAt,omitempty"`
}

// TemplateProgress is how far a template build has come.
type TemplateProgress struct {
	// Phase: queued, bootstrap, packages, configure, download, install,
	// setup (macOS, unattended), stop, copy, register.
	Phase   string  `json:"phase"`
	Percent float64 `json:"percent"`
	Message string  `json:"message,omitempty"`
}

// CreateTemplate is the body of POST /templates: build from a manifest
// (a built-in name or an absolute folder), or seal a VM (fromVmId).
type CreateTemplate struct {
	Manifest    string `json:"manifest,omitempty"`
	FromVMID    string `json:"fromVmId,omitempty"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// Full adds the manifest's full package set; With names optional sets.
	Full bool     `json:"full,omitempty"`
	With []string `json:"with,omitempty"`
	// Mirror overrides a Linux manifest's Debian mirror; RestoreImage a
	// macOS manifest's restore image ("latest", https URL, .ipsw path).
	Mirror       string `json:"mirror,omitempty"`
	RestoreImage string `json:"restoreImage,omitempty"`
	// Unattended (macOS) drives Setup Assistant and installs the guest
	// agent through the VM's own console after the install; the guided
	// setup stays the fallback.
	Unattended bool `json:"unattended,omitempty"`
}

// TemplatePatch is the body of PATCH /templates/:id; absent fields stay.
type TemplatePatch struct {
	Name        *string `json:"name,omitempty"`
	Description *string `json:"description,omitempty"`
	CPUCount    *int    `json:"cpuCount,omitempty"`
	MemoryMB    *int    `json:"memoryMB,omitempty"`
	DiskGB      *int    `json:"diskGB,omitempty"`
}

// Manifest is a template manifest shipped with the helper.
type Manifest struct {
	Name        string   `json:"name"`
	Version     int      `json:"version"`
	DisplayName string   `json:"displayName"`
	Description string   `json:"description,omitempty"`
	OS          string   `json:"os"`
	Kind        string   `json:"kind"`
	Extras      []string `json:"extras,omitempty"`
	// Supported says whether this helper can build it.
	Supported bool `json:"supported"`
}

// ManifestList is the answer of GET /templates/manifests.
type ManifestList struct {
	Manifests []Manifest `json:"manifests"`
}

// TemplateSetupRequest is the body of POST /templates/:id/setup (macOS):
// boot the template for its guided setup, or finish it.
type TemplateSetupRequest struct {
	Finish bool `json:"finish,omitempty"`
	// Force finishes even when the guest agent reports a missing grant
	// or does not answer.
	Force bool `json:"force,omitempty"`
}

// SetupStep is one step of a macOS template's guided setup.
type SetupStep struct {
	Title        string `json:"title"`
	Instructions string `json:"instructions"`
}

// TemplateSetup is the answer of POST /templates/:id/setup.
type TemplateSetup struct {
	Template Template    `json:"template"`
	Steps    []SetupStep `json:"steps"`
}
