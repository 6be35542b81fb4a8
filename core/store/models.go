package store

import (
	"time"

	"github.com/hivecrew/hivecrew/core/wire"
)

// TaskStatus is a task's lifecycle state, with the wire names of the API.
type TaskStatus string

// Task statuses. A plan-first task is planning while the model writes its
// plan and planReview while the plan waits for the user; neither holds a
// VM. Completed, failed, cancelled, timedOut, maxIterations and planFailed
// (the model gave no usable plan; the task never took a VM) are terminal.
// So is writebackReview: the agent ended and its VM is gone, and the
// changes it made to granted host folders wait for the user's review;
// approving or discarding them gives the task back the status its agent
// ended with (EndStatus).
const (
	StatusQueued        TaskStatus = "queued"
	StatusPlanning      TaskStatus = "planning"
	StatusPlanReview    TaskStatus = "planReview"
	StatusWaitingForVM  TaskStatus = "waitingForVM"
	StatusRunning       TaskStatus = "running"
	StatusPaused        TaskStatus = "paused"
	StatusCompleted     TaskStatus = "completed"
	StatusFailed        TaskStatus = "failed"
	StatusCancelled     TaskStatus = "cancelled"
	StatusTimedOut      TaskStatus = "timedOut"
	StatusMaxIterations TaskStatus = "maxIterations"
	StatusPlanFailed    TaskStatus = "planFailed"
	// StatusWritebackReview is Swift's writeback_review.
	StatusWritebackReview TaskStatus = "writebackReview"
)

// TaskStatuses lists every status, in lifecycle order.
var TaskStatuses = []TaskStatus{
	StatusQueued, StatusPlanning, StatusPlanReview, StatusWaitingForVM, StatusRunning, StatusPaused,
	StatusCompleted, StatusFailed, StatusCancelled, StatusTimedOut, StatusMaxIterations, StatusPlanFailed,
	StatusWritebackReview,
}

// Valid reports whether s is a known status.
func (s TaskStatus) Valid() bool {
	for _, v := range TaskStatuses {
		if s == v {
			return true
		}
	}
	return false
}

// Terminal reports whether a task in status s is finished for good.
func (s TaskStatus) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusTimedOut, StatusMaxIterations, StatusPlanFailed,
		StatusWritebackReview:
		return true
	}
	return false
}

// Task is one unit of work an agent does in a VM.
type Task struct {
	ID          string     `gorm:"primaryKey"`
	Title       string     `gorm:"not null"`
	Description string     `gorm:"not null"`
	Status      TaskStatus `gorm:"not null;index"`
	// StatusReason says why the task waits or how it ended ("waiting for a VM
	// slot: 2 of 2 in use", "helper restarted").
	StatusReason string
	ProviderName string `gorm:"not null"`
	ModelID      string `gorm:"not null"`
	// OutputDirectory receives the outbox; empty means the default from Settings.
	OutputDirectory string
	PlanFirst       bool
	PlanMarkdown    string
	// PlanRevision is what the user asked to change in PlanMarkdown: while
	// it is set the task is queued (or planning) for the model to rewrite
	// the plan.
	PlanRevision string
	// Todo is the agent's checklist (its todo tool), seeded from the
	// approved plan's items.
	Todo           []TodoItem `gorm:"serializer:json"`
	TemplateID     string
	TimeoutMinutes int
	MaxIterations  int
	NetworkMode    string
	// ToolPolicy is the task's own policy over the default (tool -> allow|ask|deny).
	ToolPolicy map[string]string `gorm:"serializer:json"`
	// AllowHosts are the task's additions to the egress allowlist of
	// Settings (internet mode).
	AllowHosts []string `gorm:"serializer:json"`
	// ReasoningEnabled and ReasoningEffort ask the model to reason (nil and
	// "": the provider's default).
	ReasoningEnabled *bool
	ReasoningEffort  string
	// BudgetUSD and BudgetTokens, when set, pause the task once its LLM
	// use reaches them (nil: Settings' taskBudget*).
	BudgetUSD    *float64
	BudgetTokens *int64
	// BatchID groups the tasks one batch submission made.
	BatchID string `gorm:"index"`
	// ParentTaskID is the task that started this one as a subagent, and
	// SubagentDepth how deep it is (1 for a parent's child).
	// SubagentDomain is where a subagent works: DomainVM (or "", a task
	// of an older helper) in a VM of its own, DomainHost on the host with
	// the host tools alone, taking no VM slot.
	ParentTaskID   *string `gorm:"index"`
	SubagentDepth  int
	SubagentDomain string
	// SkillNames are the skills the user mentioned for the task.
	SkillNames []string `gorm:"serializer:json"`
	// HostFolders are the folders of this computer the task was given
	// (copied into its VM; changes reviewed before they reach the host).
	HostFolders []HostFolder `gorm:"serializer:json"`
	// Provisioning is the task's own provisioning: variables and setup
	// commands added to the configured ones (no secrets).
	Provisioning *TaskProvisioning `gorm:"serializer:json"`
	// EndStatus is the status the agent ended with, while its changes to
	// the host folders wait for review (status writebackReview).
	EndStatus TaskStatus
	// AppliedWritebackPaths are the host files approved changes wrote.
	AppliedWritebackPaths []string `gorm:"serializer:json"`
	VMID                  string   `gorm:"column:vm_id;index"`
	ScheduleID            *string  `gorm:"index"`
	RerunOfID             *string
	// ContinuationOfID is the finished task this one continues (Swift's
	// continuationSourceTaskId): its outputs became this task's inputs, and
	// ContextNote, a bounded summary of it, goes to the agent before the
	// task.
	ContinuationOfID *string `gorm:"index"`
	ContextNote      string
	// Resume, on a queued task, says its next run goes on from an agent
	// session of its own (the helper stopped under it, and the user
	// resumed it) instead of starting afresh.
	Resume *TaskResume `gorm:"serializer:json"`
	// TitleEdited says the user named the task: a generated title never
	// replaces theirs. TitlePromptTokens, TitleCompletionTokens and
	// TitleCostUSD are what generating the title cost (in the task's totals
	// too).
	TitleEdited           bool
	TitlePromptTokens     int64
	TitleCompletionTokens int64
	TitleCostUSD          float64
	// CreatedAt orders the FIFO queue (with ID as the tie-break).
	CreatedAt        time.Time `gorm:"not null;index"`
	StartedAt        *time.Time
	CompletedAt      *time.Time
	ResultSummary    *string
	WasSuccessful    *bool
	StepCount        int
	PromptTokens     int64
	CompletionTokens int64
	// CostUSD estimates the task's LLM cost from the price table.
	CostUSD float64
	// SessionID is the task's agent session (its trace folder), once started.
	SessionID string
	// TraceDeletedAt is when trace retention deleted the task's session
	// traces (screenshots, events file, artifacts); the task and its
	// activity log stay.
	TraceDeletedAt *time.Time
}

// Subagent domains (Task.SubagentDomain).
const (
	DomainVM   = "vm"
	DomainHost = "host"
)

// OnHost reports whether the task runs on the host, without a VM (a
// research subagent).
func (t Task) OnHost() bool { return t.SubagentDomain == DomainHost }

// TodoItem is one item of a task's checklist.
type TodoItem struct {
	Text string `json:"text"`
	Done bool   `json:"done"`
}

// TaskProvisioning is a task's own provisioning.
type TaskProvisioning struct {
	Environment   map[string]string  `json:"environment,omitempty"`
	SetupCommands []TaskSetupCommand `json:"setupCommands,omitempty"`
}

// Wire is the provisioning as POST /tasks takes it (nil for none).
func (p *TaskProvisioning) Wire() *wire.TaskProvisioning {
	if p == nil {
		return nil
	}
	out := &wire.TaskProvisioning{Environment: p.Environment}
	for _, c := range p.SetupCommands {
		out.SetupCommands = append(out.SetupCommands, wire.SetupCommand{Command: c.Command, TimeoutSeconds: c.TimeoutSeconds})
	}
	return out
}

// TaskSetupCommand is one of a task's own setup commands.
type TaskSetupCommand struct {
	Command        string `json:"command"`
	TimeoutSeconds int    `json:"timeoutSeconds,omitempty"`
}

// HostFolder is a host folder given to a task: Name is its folder in the
// VM's shared folder (folders/NAME).
type HostFolder struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// Writeback states of a change to a host folder.
const (
	WritebackPending   = "pending"
	WritebackApplied   = "applied"
	WritebackDiscarded = "discarded"
	WritebackConflict  = "conflict"
	WritebackRefused   = "refused"
)

// WritebackItem is one change a task's agent made to a granted host
// folder: a file added, modified or deleted in its copy, waiting for the
// user, applied, discarded, in conflict with the host, or refused.
type WritebackItem struct {
	ID     string `gorm:"primaryKey"`
	TaskID string `gorm:"not null;index"`
	Task   *Task  `gorm:"constraint:OnDelete:CASCADE"`
	// Folder is the grant's name; HostRoot its host path.
	Folder   string `gorm:"not null"`
	HostRoot string `gorm:"not null"`
	// Path is the file's slash-separated path in the folder.
	Path string `gorm:"not null"`
	// Op is added, modified or deleted.
	Op         string `gorm:"not null"`
	BeforeSize *int64
	BeforeSHA  string
	BeforeMode uint32
	AfterSize  *int64
	AfterSHA   string
	// StagedPath is the agent's version, relative to the data directory.
	StagedPath string
	// Refused says why the change cannot be applied.
	Refused string
	State   string `gorm:"not null"`
	// Conflict says how the host file changed since the task started.
	Conflict  string
	UpdatedAt time.Time
}

// FileKind says which side of a task a file is on.
type FileKind string

// File kinds.
const (
	FileInput  FileKind = "input"
	FileOutput FileKind = "output"
)

// TaskFile is an input or output file of a task. Path is where its bytes are,
// relative to the data directory.
type TaskFile struct {
	ID        int64    `gorm:"primaryKey;autoIncrement"`
	TaskID    string   `gorm:"not null;uniqueIndex:idx_task_file,priority:1"`
	Task      *Task    `gorm:"constraint:OnDelete:CASCADE"`
	Kind      FileKind `gorm:"not null;uniqueIndex:idx_task_file,priority:2"`
	Name      string   `gorm:"not null;uniqueIndex:idx_task_file,priority:3"`
	Size      int64    `gorm:"not null"`
	MimeType  string
	Path      string    `gorm:"not null"`
	CreatedAt time.Time `gorm:"not null"`
	// SavedPath is where an output file was copied for the user (in the
	// output directory, under a collision-safe name); empty if it was not.
	SavedPath string
}

// AgentSession is one run of an agent on a task (a rerun is a new task; a
// helper restart ends a session).
type AgentSession struct {
	ID               string    `gorm:"primaryKey"`
	TaskID           string    `gorm:"not null;index"`
	Task             *Task     `gorm:"constraint:OnDelete:CASCADE"`
	StartedAt        time.Time `gorm:"not null"`
	EndedAt          *time.Time
	TracePath        string `gorm:"not null"`
	StepCount        int
	PromptTokens     int64
	CompletionTokens int64
	// CostUSD is the estimate from the model price table at the time of use.
	CostUSD       float64
	Interventions []Intervention `gorm:"foreignKey:SessionID;constraint:OnDelete:CASCADE"`
}

// InterventionKind is what the user did to a running agent.
type InterventionKind string

// Intervention kinds.
const (
	InterventionPause        InterventionKind = "pause"
	InterventionResume       InterventionKind = "resume"
	InterventionInstructions InterventionKind = "instructions"
	InterventionTakeover     InterventionKind = "takeover"
	InterventionHandBack     InterventionKind = "handBack"
	InterventionCancel       InterventionKind = "cancel"
)

// Intervention records one user intervention in a session.
type Intervention struct {
	ID        int64            `gorm:"primaryKey;autoIncrement"`
	SessionID string           `gorm:"not null;index"`
	Session   *AgentSession    `gorm:"constraint:OnDelete:CASCADE"`
	Kind      InterventionKind `gorm:"not null"`
	Text      string
	CreatedAt time.Time `gorm:"not null"`
}

// VM is a virtual machine or sandbox the pool manages.
type VM struct {
	ID          string `gorm:"primaryKey"`
	Name        string `gorm:"not null"`
	Backend     string `gorm:"not null"` // "sandbox", "vz", "fake"
	TemplateID  string `gorm:"not null;index"`
	State       string `gorm:"not null"` // stopped, booting, ready, busy, suspending, suspended, error
	StateReason string
	CPUCount    int
	MemoryMB    int
	DiskGB      int
	NetworkMode string
	// Dir is the VM's folder (bundle, overlay, shared folder), absolute.
	Dir string `gorm:"not null"`
	// TaskID is the task the VM serves, if any.
	TaskID string `gorm:"index"`
	// Limits says how resource caps are enforced ("cgroup v2", "rlimit").
	Limits       string
	AgentVersion string
	CreatedAt    time.Time `gorm:"not null"`
	UpdatedAt    time.Time
	LastUsedAt   *time.Time
}

// TaskResume is where a task's next run goes on from.
type TaskResume struct {
	// SessionID is the agent session whose conversation it goes on with.
	SessionID string `json:"sessionId"`
	// Instructions are the user's, given with the resume.
	Instructions string `json:"instructions,omitempty"`
	// Why says what stopped the session (for the agent's note).
	Why string `json:"why,omitempty"`
}

// Event is one entry of a task's activity log; Seq numbers a task's events
// from 1 without gaps.
type Event struct {
	ID             int64     `gorm:"primaryKey;autoIncrement"`
	TaskID         string    `gorm:"not null;uniqueIndex:idx_event_seq,priority:1"`
	Task           *Task     `gorm:"constraint:OnDelete:CASCADE"`
	Seq            int64     `gorm:"not null;uniqueIndex:idx_event_seq,priority:2"`
	Type           string    `gorm:"not null"`
	Timestamp      time.Time `gorm:"not null"`
	Summary        string
	ActivityType   string
	Details        string
	Reasoning      string
	Status         string
	SubagentID     string
	ScreenshotPath string
	// Point is where on the screen the event's action aims, if it aims
	// at one (NULL for the rest, and for events stored before schema 16).
	Point *EventPoint `gorm:"serializer:json"`
}

// EventPoint is a point of the screen an action aims at, as the API
// sends it and stored as its JSON (wire.Point): X, Y (and, for a drag, ToX,
// ToY where it ends) in the pixels of a Width×Height image of the screen
// the model saw, the screenshot before the action.
type EventPoint wire.Point

// Question is a question the agent asked the user.
type Question struct {
	ID         string   `gorm:"primaryKey"`
	TaskID     string   `gorm:"not null;index"`
	Task       *Task    `gorm:"constraint:OnDelete:CASCADE"`
	Kind       string   `gorm:"not null"` // "text", "multipleChoice"
	Question   string   `gorm:"not null"`
	Options    []string `gorm:"serializer:json"`
	Answer     *string
	CreatedAt  time.Time `gorm:"not null"`
	AnsweredAt *time.Time
}

// PermissionRequest asks the user to approve one dangerous tool call.
type PermissionRequest struct {
	ID          string `gorm:"primaryKey"`
	TaskID      string `gorm:"not null;index"`
	Task        *Task  `gorm:"constraint:OnDelete:CASCADE"`
	ToolName    string `gorm:"not null"`
	Details     string
	Approved    *bool
	CreatedAt   time.Time `gorm:"not null"`
	RespondedAt *time.Time
}

// SchemaVersion records a migration applied to the database.
type SchemaVersion struct {
	Version   int       `gorm:"primaryKey;autoIncrement:false"`
	AppliedAt time.Time `gorm:"not null"`
}

// models lists every table of schema version 1, parents before children.
func models() []any {
	return []any{
		&Task{}, &TaskFile{}, &AgentSession{}, &Intervention{}, &VM{}, &Template{},
		&Provider{}, &Schedule{}, &ScheduleFile{}, &Event{}, &Question{},
		&PermissionRequest{}, &APIKey{}, &Setting{},
	}
}
