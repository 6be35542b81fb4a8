package wire

import (
	"time"
)

// StopAll is the answer of POST /system/stop-all.
type StopAll struct {
	// Stopped lists the tasks that were cancelled.
	Stopped []string `json:"stopped"`
	// DurationMs is how long stopping took.
	DurationMs float64 `json:"durationMs"`
}

// Usage is the answer of GET /usage (extension): the tokens and estimated
// cost of the tasks started since a time, per provider and model, and in
// all.
type Usage struct {
	Since  time.Time    `json:"since"`
	Models []ModelUsage `json:"models"`
	Total  ModelUsage   `json:"total"`
}

// ModelUsage is the use of one provider and model (or, as Usage.Total, of
// all; then the names are empty).
type ModelUsage struct {
	ProviderName     string  `json:"providerName,omitempty"`
	ModelID          string  `json:"modelId,omitempty"`
	Tasks            int64   `json:"tasks"`
	PromptTokens     int64   `json:"promptTokens"`
	CompletionTokens int64   `json:"completionTokens"`
	TotalTokens      int64   `json:"totalTokens"`
	CostUSD          float64 `json:"costUSD"`
}

// VM is a machine of the pool (extension).
type VM struct {
	ID         string     `json:"id"`
	Backend    string     `json:"backend"`
	TemplateID string     `json:"templateId"`
	State      string     `json:"state"`
	Reason     string     `json:"reason,omitempty"`
	TaskID     string     `json:"taskId,omitempty"`
	TaskTitle  string     `json:"taskTitle,omitempty"`
	CPUCount   int        `json:"cpuCount"`
	MemoryMB   int        `json:"memoryMB"`
	Network    string     `json:"networkMode"`
	Limits     *VMLimits  `json:"limits,omitempty"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt,omitempty"`
	// AgentVersion is what the guest agent said in hello; AgentOutdated
	// flags one older than the helper (rebuild the VM's template).
	AgentVersion  string `json:"agentVersion,omitempty"`
	AgentOutdated bool   `json:"agentOutdated,omitempty"`
	// Developer marks a developer VM (hivecrew vms open): no agent, the
	// user's by hand until removed.
	Developer bool `json:"developer,omitempty"`
	// ScreenWidth and ScreenHeight are a developer VM's screen in guest
	// points (where its input lands).
	ScreenWidth  int `json:"screenWidth,omitempty"`
	ScreenHeight int `json:"screenHeight,omitempty"`
}

// OpenVM is the body of POST /vms: a developer VM of a template.
type OpenVM struct {
	TemplateID string `json:"templateId"`
}

// VMLimits says, per resource, what caps a VM on its host: the mechanism
// and the cap. An absent field is not capped (the VM shares the host's).
type VMLimits struct {
	Processes string `json:"processes,omitempty"`
	Memory    string `json:"memory,omitempty"`
	CPU       string `json:"cpu,omitempty"`
	Disk      string `json:"disk,omitempty"`
	// UID is the host account the VM runs as: one of its own, or shared.
	UID string `json:"uid,omitempty"`
}

// VMList is the answer of GET /vms.
type VMList struct {
	VMs []VM `json:"vms"`
}

// Status is the answer of GET /system/status.
type Status struct {
	Status    string          `json:"status"`
	Version   string          `json:"version"`
	Uptime    int64           `json:"uptime"` // whole seconds
	Agents    AgentCounts     `json:"agents"`
	VMs       VMCounts        `json:"vms"`
	Resources ResourceSummary `json:"resources"`
	Backend   string          `json:"backend"`
	// Runtime is the helper process's own state (extension), for watching
	// it over days of tasks.
	Runtime RuntimeStats `json:"runtime"`
}

// RuntimeStats describe the helper process: its goroutines, the Go heap
// in use and its open file descriptors (-1 where the OS does not say).
type RuntimeStats struct {
	Goroutines  int     `json:"goroutines"`
	HeapAllocMB float64 `json:"heapAllocMB"`
	OpenFiles   int     `json:"openFiles"`
}

// AgentCounts counts tasks by state.
type AgentCounts struct {
	Running       int `json:"running"`
	Paused        int `json:"paused"`
	Queued        int `json:"queued"`
	MaxConcurrent int `json:"maxConcurrent"`
}

// VMCounts counts the pool's machines.
type VMCounts struct {
	Active    int `json:"active"`
	Pending   int `json:"pending"`
	Available int `json:"available"`
}

// ResourceSummary describes the host.
type ResourceSummary struct {
	MemoryTotalGB float64 `json:"memoryTotalGB"`
}

// SystemConfig is the answer of GET /system/config.
type SystemConfig struct {
	MaxConcurrentVMs      int    `json:"maxConcurrentVMs"`
	DefaultTimeoutMinutes int    `json:"defaultTimeoutMinutes"`
	DefaultMaxIterations  int    `json:"defaultMaxIterations"`
	DefaultTemplateID     string `json:"defaultTemplateId,omitempty"`
	APIPort               int    `json:"apiPort"`
	// WebURL (extension) is where the helper serves the API and the web
	// UI now (the port of --addr when it was started with one, not the
	// apiPort setting).
	WebURL string `json:"webURL,omitempty"`
}

// Provisioning is the answer of GET /provisioning and the body of PUT
// /provisioning (extension): what VMs are given after they boot and before
// their agent starts. Swift's shape (environment variable names, injected
// files) plus the setup commands, each entry's template scope and a secret
// variable's flag; a secret's value is never sent back.
type Provisioning struct {
	EnvironmentVariables []EnvironmentVariable `json:"environmentVariables"`
	InjectedFiles        []InjectedFile        `json:"injectedFiles"`
	SetupCommands        []SetupCommand        `json:"setupCommands"`
}

// EnvironmentVariable is a variable set in VMs. Value (extension) is sent
// back only for a variable that is not Secret; a secret one's value is
// write-only (a PUT without it keeps the stored one). Template, if set,
// limits it to the VMs of that template (its id or name).
type EnvironmentVariable struct {
	Key      string `json:"key"`
	Value    string `json:"value,omitempty"`
	Secret   bool   `json:"secret,omitempty"`
	Template string `json:"template,omitempty"`
}

// InjectedFile is a file of this computer (SourcePath, extension) copied to
// GuestPath (absolute, or under "~/") as each VM starts, with Mode (octal,
// default "0644").
type InjectedFile struct {
	FileName   string `json:"fileName"`
	GuestPath  string `json:"guestPath"`
	SourcePath string `json:"sourcePath,omitempty"`
	Mode       string `json:"mode,omitempty"`
	Template   string `json:"template,omitempty"`
}

// SetupCommand (extension) runs in each VM, in order, after the variables
// and files are in place; a failure or a timeout fails the task.
type SetupCommand struct {
	Command        string `json:"command"`
	TimeoutSeconds int    `json:"timeoutSeconds,omitempty"`
	Template       string `json:"template,omitempty"`
}

// APIKey describes an API key; the key itself is only in CreatedAPIKey.
type APIKey struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt,omitempty"`
	RevokedAt  *time.Time `json:"revokedAt,omitempty"`
}

// CreatedAPIKey answers POST /apikeys: the key, shown this once.
type CreatedAPIKey struct {
	APIKey
	Key string `json:"key"`
}

// APIKeyList is the answer of GET /apikeys.
type APIKeyList struct {
	Keys []APIKey `json:"keys"`
}
