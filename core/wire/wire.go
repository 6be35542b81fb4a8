// Package wire holds the JSON bodies of the helper's REST API v1
// (core/api/API.md): what the API writes and the client reads. Field names are
// the API's camelCase names; times are RFC 3339 UTC in whole seconds (the
// API truncates them, as Foundation's .iso8601 decoder in Swift clients
// needs), and list fields are sent as [] rather than left out.
package wire

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Error is the body of every error answer.
type Error struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody says what went wrong; Code is a stable machine-readable class.
type ErrorBody struct {
	Message string `json:"message"`
	Code    string `json:"code"`
	// Details adds context to Message, when there is any.
	Details string `json:"details,omitempty"`
}

// TokenUsage counts a task's LLM tokens.
type TokenUsage struct {
	Prompt     int64 `json:"prompt"`
	Completion int64 `json:"completion"`
	Total      int64 `json:"total"`
}

// File is one input or output file of a task.
type File struct {
	Name       string     `json:"name"`
	Size       int64      `json:"size"`
	MimeType   string     `json:"mimeType"`
	UploadedAt *time.Time `json:"uploadedAt,omitempty"` // input files
	CreatedAt  *time.Time `json:"createdAt,omitempty"`  // output files
	// SavedTo is where an output file was copied for the user (extension).
	SavedTo string `json:"savedTo,omitempty"`
}

// Question is a question the agent asked the user.
type Question struct {
	ID               string    `json:"id"`
	Question         string    `json:"question"`
	SuggestedAnswers []string  `json:"suggestedAnswers,omitempty"`
	CreatedAt        time.Time `json:"createdAt"`
}

// PermissionSafetyCheck is the toolName of a permission request that a
// model provider's own safety check raised on a computer action (OpenAI's
// pending_safety_checks): its details say the check and the action. It
// waits for the user whatever the task's policy (extension).
const PermissionSafetyCheck = "safety_check"

// Permission is a tool call waiting for the user's approval.
type Permission struct {
	ID        string    `json:"id"`
	ToolName  string    `json:"toolName"`
	Details   string    `json:"details"`
	CreatedAt time.Time `json:"createdAt"`
}

// TodoItem is one item of a task's checklist (extension).
type TodoItem struct {
	Text string `json:"text"`
	Done bool   `json:"done"`
}

// Screen is a guest display: Width and Height in logical points, Scale
// points to pixels (2 on a Retina display).
type Screen struct {
	Width  int     `json:"width"`
	Height int     `json:"height"`
	Scale  float64 `json:"scale"`
}

// Task is a task as GET /tasks/:id answers it. In listings InputFiles and
// OutputFiles are left out and the counts are set instead.
type Task struct {
	ID            string     `json:"id"`
	Title         string     `json:"title"`
	Description   string     `json:"description"`
	Status        string     `json:"status"`
	StatusReason  string     `json:"statusReason,omitempty"`
	ProviderName  string     `json:"providerName"`
	ModelID       string     `json:"modelId"`
	CreatedAt     time.Time  `json:"createdAt"`
	StartedAt     *time.Time `json:"startedAt,omitempty"`
	CompletedAt   *time.Time `json:"completedAt,omitempty"`
	ResultSummary *string    `json:"resultSummary,omitempty"`
	WasSuccessful *bool      `json:"wasSuccessful,omitempty"`
	// ErrorMessage says why a task that failed, timed out or ran out of
	// steps ended (statusReason, under Swift's name).
	ErrorMessage *string `json:"errorMessage,omitempty"`
	VMID         string  `json:"vmId,omitempty"`
	// Duration is whole seconds from start to end (or to now).
	Duration         *int64      `json:"duration,omitempty"`
	StepCount        *int        `json:"stepCount,omitempty"`
	TokenUsage       *TokenUsage `json:"tokenUsage,omitempty"`
	CostUSD          *float64    `json:"costUSD,omitempty"`
	PlanFirst        bool        `json:"planFirst"`
	ReasoningEnabled *bool       `json:"reasoningEnabled,omitempty"`
	ReasoningEffort  *string     `json:"reasoningEffort,omitempty"`
	PlanMarkdown     *string     `json:"planMarkdown,omitempty"`
	// PlanRevision is what the user asked to change in the plan, while
	// the model rewrites it (extension).
	PlanRevision string `json:"planRevision,omitempty"`
	// Todo is the agent's checklist (its todo tool; extension), seeded
	// from the approved plan's items.
	Todo              []TodoItem  `json:"todo,omitempty"`
	PendingQuestion   *Question   `json:"pendingQuestion,omitempty"`
	PendingPermission *Permission `json:"pendingPermission,omitempty"`
	TakenOver         bool        `json:"takenOver,omitempty"`
	// Screen is the guest display of a task with a running VM (extension):
	// the logical points takeover input is given in.
	Screen *Screen `json:"screen,omitempty"`
	// Configuration (extensions).
	OutputDirectory string            `json:"outputDirectory,omitempty"`
	TemplateID      string            `json:"templateId,omitempty"`
	TimeoutMinutes  int               `json:"timeoutMinutes,omitempty"`
	MaxIterations   int               `json:"maxIterations,omitempty"`
	NetworkMode     string            `json:"networkMode,omitempty"`
	ToolPolicy      map[string]string `json:"toolPolicy,omitempty"`
	// AllowHosts are the task's own additions to the egress allowlist.
	AllowHosts []string `json:"allowHosts,omitempty"`
	// BudgetUSD and BudgetTokens are the task's own budget, if it has one.
	BudgetUSD    *float64 `json:"budgetUSD,omitempty"`
	BudgetTokens *int64   `json:"budgetTokens,omitempty"`
	ScheduleID   string   `json:"scheduleId,omitempty"`
	RerunOf      string   `json:"rerunOf,omitempty"`
	// TitleEdited says the user named the task (extension): a generated
	// title does not replace theirs.
	TitleEdited bool `json:"titleEdited,omitempty"`
	// ContinuationSourceTaskID is the finished task this one continues
	// (Swift's): its outputs are among this task's inputs.
	ContinuationSourceTaskID string `json:"continuationSourceTaskId,omitempty"`
	// BatchID groups the tasks of one POST /tasks/batch (extension).
	BatchID string `json:"batchId,omitempty"`
	// ParentTaskID is the task that started this one as a subagent, and
	// SubagentDomain where it works: "vm" (a VM of its own) or "host" (a
	// research subagent, without a VM); Subagents, in GET /tasks/:id, are
	// the ones it started (extensions).
	ParentTaskID   string         `json:"parentTaskId,omitempty"`
	SubagentDomain string         `json:"subagentDomain,omitempty"`
	Subagents      []SubagentInfo `json:"subagents,omitempty"`
	// MentionedSkillNames are the skills the task was asked to use.
	MentionedSkillNames []string `json:"mentionedSkillNames,omitempty"`
	// HostFolders are the folders of this computer the task was given
	// (extension); PendingWriteback, PendingWritebackCount and
	// AppliedWritebackPaths are Swift's: the changes to them waiting for
	// review (status writebackReview) and the host files approved ones
	// wrote. EndStatus is the status the agent ended with, which the task
	// gets back once the review is done (extension).
	HostFolders           []HostFolder      `json:"hostFolders,omitempty"`
	Provisioning          *TaskProvisioning `json:"provisioning,omitempty"`
	PendingWriteback      *PendingWriteback `json:"pendingWriteback,omitempty"`
	PendingWritebackCount *int              `json:"pendingWritebackCount,omitempty"`
	AppliedWritebackPaths []string          `json:"appliedWritebackPaths,omitempty"`
	EndStatus             string            `json:"endStatus,omitempty"`
	// TraceDeletedAt is when trace retention deleted the task's
	// screenshots, events file and artifacts (extension).
	TraceDeletedAt *time.Time `json:"traceDeletedAt,omitempty"`

	InputFiles      []File `json:"inputFiles"`
	OutputFiles     []File `json:"outputFiles"`
	InputFileCount  *int   `json:"inputFileCount,omitempty"`
	OutputFileCount *int   `json:"outputFileCount,omitempty"`
}

// HostFolder is a folder of this computer a task was given: Name is its
// folder in the VM's shared folder (folders/NAME).
type HostFolder struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// PendingWriteback is Swift's summary of the changes waiting for review.
type PendingWriteback struct {
	Count        int  `json:"count"`
	HasConflicts bool `json:"hasConflicts"`
}

// WritebackReview is the answer of GET /tasks/:id/writeback (Swift's
// shape).
type WritebackReview struct {
	TaskID       string          `json:"taskId"`
	Items        []WritebackItem `json:"items"`
	HasConflicts bool            `json:"hasConflicts"`
}

// WritebackItem is one change to a host folder. Operation is Swift's
// (copy: a new file; replace_file: a changed one) or delete (extension);
// DiffPreview is a unified diff of a text file, StagedPreview the start of
// the agent's version. Folder, Path, Op, State, Refused and the sizes are
// extensions: State is pending, applied, discarded, conflict or refused.
type WritebackItem struct {
	ID                string  `json:"id"`
	Operation         string  `json:"operation"`
	SourceFileName    string  `json:"sourceFileName"`
	DestinationPath   string  `json:"destinationPath"`
	DestinationExists bool    `json:"destinationExists"`
	HasConflict       bool    `json:"hasConflict"`
	ConflictReason    *string `json:"conflictReason,omitempty"`
	DiffPreview       *string `json:"diffPreview,omitempty"`
	StagedPreview     *string `json:"stagedPreview,omitempty"`
	Folder            string  `json:"folder"`
	Path              string  `json:"path"`
	Op                string  `json:"op"`
	State             string  `json:"state"`
	Refused           string  `json:"refused,omitempty"`
	SizeBefore        *int64  `json:"sizeBefore,omitempty"`
	SizeAfter         *int64  `json:"sizeAfter,omitempty"`
	// Kind is text, image or binary (for the review's preview).
	Kind string `json:"kind"`
}

// TaskSummary is a task in GET /tasks: the file counts instead of the
// file lists (which these fields hide).
type TaskSummary struct {
	Task
	InputFiles  []File `json:"inputFiles,omitempty"`
	OutputFiles []File `json:"outputFiles,omitempty"`
}

// Limits of a new task (POST /tasks): the description's bytes, and the
// largest timeoutMinutes and maxIterations (0 is the default).
const (
	MaxTaskDescription    = 100_000
	MaxTaskTimeoutMinutes = 24 * 60
	MaxTaskIterations     = 10_000
)

// CreateTask is the body of POST /tasks (JSON, or the fields of a
// multipart form).
type CreateTask struct {
	Description      string            `json:"description"`
	ProviderName     string            `json:"providerName,omitempty"`
	ModelID          string            `json:"modelId,omitempty"`
	OutputDirectory  string            `json:"outputDirectory,omitempty"`
	PlanFirst        bool              `json:"planFirst,omitempty"`
	ReasoningEnabled *bool             `json:"reasoningEnabled,omitempty"`
	ReasoningEffort  string            `json:"reasoningEffort,omitempty"`
	TemplateID       string            `json:"templateId,omitempty"`
	TimeoutMinutes   int               `json:"timeoutMinutes,omitempty"`
	MaxIterations    int               `json:"maxIterations,omitempty"`
	NetworkMode      string            `json:"networkMode,omitempty"`
	ToolPolicy       map[string]string `json:"toolPolicy,omitempty"`
	// AllowHosts adds hosts, addresses or CIDR ranges an internet-mode
	// task may reach past the egress policy (extension).
	AllowHosts []string `json:"allowHosts,omitempty"`
	// BudgetUSD and BudgetTokens pause the task once its LLM use reaches
	// them (extension; default Settings' taskBudgetUSD/taskBudgetTokens).
	BudgetUSD    *float64 `json:"budgetUSD,omitempty"`
	BudgetTokens *int64   `json:"budgetTokens,omitempty"`
	// HostFolders are folders of this computer the task works on: copied
	// into its VM, the changes reviewed before they reach the host
	// (extension).
	HostFolders []string `json:"hostFolders,omitempty"`
	// Provisioning adds variables and setup commands for this task's VM
	// to the configured ones (extension; no secrets: they are kept with
	// the task).
	Provisioning *TaskProvisioning `json:"provisioning,omitempty"`
	// SetupCommand runs in the task's VM before its agent starts, and
	// CheckCommand after it stops, before the VM is released (extension
	// for the evaluation harness; neither is shown to the agent).
	SetupCommand string `json:"setupCommand,omitempty"`
	CheckCommand string `json:"checkCommand,omitempty"`
	SwiftTaskFields
}

// TaskProvisioning is a task's own provisioning (extension): variables
// (over the configured ones of the same name) and setup commands (after
// the configured ones). Kept with the task, and on a rerun.
type TaskProvisioning struct {
	Environment   map[string]string `json:"environment,omitempty"`
	SetupCommands []SetupCommand    `json:"setupCommands,omitempty"`
}

// CheckResult is how a task's check command ended (GET
// /tasks/:id/check). Stdout and stderr keep their last 4 KB; Error says
// why the guest did not run it (ExitCode is then -1).
type CheckResult struct {
	Command   string    `json:"command"`
	ExitCode  int       `json:"exitCode"`
	Stdout    string    `json:"stdout"`
	Stderr    string    `json:"stderr"`
	TimedOut  bool      `json:"timedOut,omitempty"`
	Truncated bool      `json:"truncated,omitempty"`
	Error     string    `json:"error,omitempty"`
	RanAt     time.Time `json:"ranAt"`
}

// SwiftTaskFields are fields the Swift server takes on a new task. Some
// are for features Hivecrew does not have (task priority, task
// references, context packs): they are type-checked and accepted, so a
// Swift client works, and have no effect (API.md says which).
// ContinuationSourceTaskID continues a finished task, and a task that
// continues one shows it.
type SwiftTaskFields struct {
	Priority                 string            `json:"priority,omitempty"` // low, normal, high
	MentionedSkillNames      []string          `json:"mentionedSkillNames,omitempty"`
	ReferencedTaskIDs        []string          `json:"referencedTaskIds,omitempty"`
	ContinuationSourceTaskID string            `json:"continuationSourceTaskId,omitempty"`
	ContextPackID            string            `json:"contextPackId,omitempty"`
	ContextSuggestionIDs     []string          `json:"contextSuggestionIds,omitempty"`
	ContextModeOverrides     map[string]string `json:"contextModeOverrides,omitempty"`
	ContextInlineBlocks      []string          `json:"contextInlineBlocks,omitempty"`
	ContextAttachmentPaths   []string          `json:"contextAttachmentPaths,omitempty"`
}

// BatchTarget is one provider and model of POST /tasks/batch, run
// CopyCount times (1 to 8).
type BatchTarget struct {
	ProviderID       string `json:"providerId"`
	ModelID          string `json:"modelId"`
	CopyCount        *int   `json:"copyCount,omitempty"`
	ReasoningEnabled *bool  `json:"reasoningEnabled,omitempty"`
	ReasoningEffort  string `json:"reasoningEffort,omitempty"`
}

// CreateTaskBatch is the body of POST /tasks/batch: one task description,
// its inputs and options, run on every target.
type CreateTaskBatch struct {
	CreateTask
	Targets []BatchTarget `json:"targets"`
}

// TaskBatch is the answer of POST /tasks/batch.
type TaskBatch struct {
	Tasks []Task `json:"tasks"`
}

// TaskList is the answer of GET /tasks.
type TaskList struct {
	Tasks  []TaskSummary `json:"tasks"`
	Total  int64         `json:"total"`
	Limit  int           `json:"limit"`
	Offset int           `json:"offset"`
}

// TaskAction is the body of PATCH /tasks/:id.
type TaskAction struct {
	Action       string `json:"action"`
	Instructions string `json:"instructions,omitempty"`
	PlanMarkdown string `json:"planMarkdown,omitempty"`
	// BudgetUSD and BudgetTokens, with resume, give the task a new budget
	// first (a task paused by its budget resumes once it is raised).
	BudgetUSD    *float64 `json:"budgetUSD,omitempty"`
	BudgetTokens *int64   `json:"budgetTokens,omitempty"`
	// ExtraSteps and ExtraMinutes, with resume, raise the limits of a task
	// held at its step or time limit (extension; without them it gets its
	// limit again).
	ExtraSteps   *int     `json:"extraSteps,omitempty"`
	ExtraMinutes *float64 `json:"extraMinutes,omitempty"`
	// ItemIDs, with approve_writeback or discard_writeback, are the
	// changes to decide (extension; without them, all that are pending).
	ItemIDs []string `json:"itemIds,omitempty"`
	// ProviderName and ModelID, with rerun, run the task again on another
	// provider or model (extension; a provider alone takes its default
	// model).
	ProviderName string `json:"providerName,omitempty"`
	ModelID      string `json:"modelId,omitempty"`
	// Title, with rename, is the task's new name (extension).
	Title string `json:"title,omitempty"`
}

// Task actions.
const (
	ActionCancel      = "cancel"
	ActionPause       = "pause"
	ActionResume      = "resume"
	ActionRerun       = "rerun"
	ActionApprovePlan = "approve_plan"
	ActionEditPlan    = "edit_plan"
	ActionCancelPlan  = "cancel_plan"
	// ActionRevisePlan asks the model to rewrite the plan under review as
	// the user says in instructions (extension).
	ActionRevisePlan = "revise_plan"
	// ActionInstruct gives a running agent more instructions.
	ActionInstruct = "instruct"
	// Host-folder writeback review (Swift); Hivecrew stages no writebacks,
	// so these answer 409.
	ActionApproveWriteback = "approve_writeback"
	ActionDiscardWriteback = "discard_writeback"
	// ActionRename gives the task the user's title (extension).
	ActionRename = "rename"
)

// TaskActions lists the actions of PATCH /tasks/:id.
var TaskActions = []string{ActionCancel, ActionPause, ActionResume, ActionRerun, ActionInstruct,
	ActionApprovePlan, ActionEditPlan, ActionRevisePlan, ActionCancelPlan, ActionApproveWriteback, ActionDiscardWriteback, ActionRename}

// TaskFiles is the answer of GET /tasks/:id/files.
type TaskFiles struct {
	TaskID      string `json:"taskId"`
	InputFiles  []File `json:"inputFiles"`
	OutputFiles []File `json:"outputFiles"`
}

// Event is one entry of a task's activity log.
type Event struct {
	// Seq numbers a task's events from 1 (extension; the SSE id too).
	Seq       int64     `json:"seq"`
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      EventData `json:"data"`
}

// LiveEvent is an llm_stream event of the event stream with ?live=1
// (extension): a piece of the model's answer as it streams. It is not
// stored and has no seq.
type LiveEvent struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      LiveData  `json:"data"`
}

// LiveData is what an llm_stream event says: Reset starts the answer over,
// Text and Reasoning are what it grew by.
type LiveData struct {
	TaskID    string `json:"taskId"`
	Step      int    `json:"step"`
	Reset     bool   `json:"reset"`
	Text      string `json:"text"`
	Reasoning string `json:"reasoning"`
}

// EventData is what an event says.
type EventData struct {
	Summary      string `json:"summary"`
	ActivityType string `json:"activityType"`
	Details      string `json:"details,omitempty"`
	Reasoning    string `json:"reasoning,omitempty"`
	Status       string `json:"status,omitempty"`
	TaskID       string `json:"taskId,omitempty"`
	SubagentID   string `json:"subagentId,omitempty"`
	// Screenshot is the URL of the event's screenshot (extension).
	Screenshot string `json:"screenshot,omitempty"`
	// Point is where on the screen the event's action aims (extension).
	Point *Point `json:"point,omitempty"`
}

// Point is a point of the screen an action aims at: X, Y (ToX, ToY where
// a drag ends) in the pixels of a Width×Height image of the screen the
// model saw, the screenshot before the action.
type Point struct {
	X      float64  `json:"x"`
	Y      float64  `json:"y"`
	ToX    *float64 `json:"toX,omitempty"`
	ToY    *float64 `json:"toY,omitempty"`
	Width  int      `json:"width"`
	Height int      `json:"height"`
}

// Activity is the answer of GET /tasks/:id/activity.
type Activity struct {
	Events []Event `json:"events"`
	Total  int64   `json:"total"`
}

// Answer is the body of POST /tasks/:id/question/answer.
type Answer struct {
	QuestionID string `json:"questionId"`
	Answer     string `json:"answer"`
}

// PermissionResponse is the body of POST /tasks/:id/permission/respond.
type PermissionResponse struct {
	PermissionID string `json:"permissionId"`
	Approved     *bool  `json:"approved"`
}

// Instructions is the body of POST /tasks/:id/instructions.
type Instructions struct {
	Text string `json:"text"`
}

// Takeover is the body of POST /tasks/:id/takeover.
type Takeover struct {
	Action       string `json:"action"` // start, end
	Instructions string `json:"instructions,omitempty"`
	// Native asks the helper to show the VM's own window (macOS guests):
	// closing it hands the VM back (extension).
	Native bool `json:"native,omitempty"`
}

// Input is one pointer or keyboard event of the web takeover view, in the
// guest's logical screen points (POST /tasks/:id/input).
type Input struct {
	Type      string   `json:"type"` // click, move, drag, scroll, type, key
	X         float64  `json:"x,omitempty"`
	Y         float64  `json:"y,omitempty"`
	ToX       float64  `json:"toX,omitempty"`
	ToY       float64  `json:"toY,omitempty"`
	Button    string   `json:"button,omitempty"`
	ClickType string   `json:"clickType,omitempty"`
	DeltaX    float64  `json:"deltaX,omitempty"`
	DeltaY    float64  `json:"deltaY,omitempty"`
	Text      string   `json:"text,omitempty"`
	Key       string   `json:"key,omitempty"`
	Modifiers []string `json:"modifiers,omitempty"`
}

// StopAll is the answer of POST /system/stop-all.
type StopAll struct {
	// Stopped lists the tasks that were cancelled.
	Stopped []string `json:"stopped"`
	// DurationMs is how long stopping took.
	DurationMs float64 `json:"durationMs"`
}

// Recurrence is when a recurring schedule runs, in its time zone.
type Recurrence struct {
	Type       string `json:"type"` // daily, weekly, monthly
	DaysOfWeek []int  `json:"daysOfWeek,omitempty"`
	DayOfMonth int    `json:"dayOfMonth,omitempty"`
	Hour       int    `json:"hour"`
	Minute     int    `json:"minute"`
}

// When is a schedule's timing: a time, or a recurrence.
type When struct {
	ScheduledAt *time.Time  `json:"scheduledAt,omitempty"`
	Recurrence  *Recurrence `json:"recurrence,omitempty"`
	// TimeZone is an IANA zone name (extension); default the helper's.
	TimeZone string `json:"timeZone,omitempty"`
}

// CreateSchedule is the body of POST /schedules and of PATCH (all fields
// optional there). The timing is Schedule, or (as Swift's PATCH takes it)
// ScheduledAt or Recurrence at the top level.
type CreateSchedule struct {
	Title            string            `json:"title"`
	Description      string            `json:"description"`
	ProviderName     string            `json:"providerName,omitempty"`
	ModelID          string            `json:"modelId,omitempty"`
	ReasoningEnabled *bool             `json:"reasoningEnabled,omitempty"`
	ReasoningEffort  string            `json:"reasoningEffort,omitempty"`
	OutputDirectory  string            `json:"outputDirectory,omitempty"`
	Schedule         *When             `json:"schedule,omitempty"`
	ScheduledAt      *time.Time        `json:"scheduledAt,omitempty"`
	Recurrence       *Recurrence       `json:"recurrence,omitempty"`
	IsEnabled        *bool             `json:"isEnabled,omitempty"`
	TemplateID       string            `json:"templateId,omitempty"`
	TimeoutMinutes   int               `json:"timeoutMinutes,omitempty"`
	MaxIterations    int               `json:"maxIterations,omitempty"`
	NetworkMode      string            `json:"networkMode,omitempty"`
	ToolPolicy       map[string]string `json:"toolPolicy,omitempty"`
	// The other options of POST /tasks (extensions). In PATCH, a field
	// left out is unchanged ([] and {} clear a list or the provisioning).
	PlanFirst    *bool             `json:"planFirst,omitempty"`
	HostFolders  []string          `json:"hostFolders,omitempty"`
	Provisioning *TaskProvisioning `json:"provisioning,omitempty"`
	AllowHosts   []string          `json:"allowHosts,omitempty"`
	BudgetUSD    *float64          `json:"budgetUSD,omitempty"`
	BudgetTokens *int64            `json:"budgetTokens,omitempty"`
}

// Schedule is a schedule as the API answers it.
type Schedule struct {
	ID               string      `json:"id"`
	Title            string      `json:"title"`
	Description      string      `json:"description"`
	ProviderName     string      `json:"providerName"`
	ModelID          string      `json:"modelId"`
	ReasoningEnabled *bool       `json:"reasoningEnabled,omitempty"`
	ReasoningEffort  *string     `json:"reasoningEffort,omitempty"`
	OutputDirectory  string      `json:"outputDirectory,omitempty"`
	IsEnabled        bool        `json:"isEnabled"`
	ScheduleType     string      `json:"scheduleType"` // one-time, recurring
	ScheduledAt      *time.Time  `json:"scheduledAt,omitempty"`
	Recurrence       *Recurrence `json:"recurrence,omitempty"`
	TimeZone         string      `json:"timeZone"`
	NextRunAt        *time.Time  `json:"nextRunAt,omitempty"`
	LastRunAt        *time.Time  `json:"lastRunAt,omitempty"`
	CreatedAt        time.Time   `json:"createdAt"`
	InputFiles       []File      `json:"inputFiles"`
	InputFileCount   int         `json:"inputFileCount"`
	// The configuration of the tasks it starts beyond Swift's fields
	// (extensions), as POST /tasks takes it.
	TemplateID     string            `json:"templateId,omitempty"`
	TimeoutMinutes int               `json:"timeoutMinutes,omitempty"`
	MaxIterations  int               `json:"maxIterations,omitempty"`
	NetworkMode    string            `json:"networkMode,omitempty"`
	ToolPolicy     map[string]string `json:"toolPolicy,omitempty"`
	PlanFirst      bool              `json:"planFirst,omitempty"`
	HostFolders    []string          `json:"hostFolders,omitempty"`
	Provisioning   *TaskProvisioning `json:"provisioning,omitempty"`
	AllowHosts     []string          `json:"allowHosts,omitempty"`
	BudgetUSD      *float64          `json:"budgetUSD,omitempty"`
	BudgetTokens   *int64            `json:"budgetTokens,omitempty"`
}

// ScheduleList is the answer of GET /schedules.
type ScheduleList struct {
	Schedules []Schedule `json:"schedules"`
	Total     int64      `json:"total"`
	Limit     int        `json:"limit"`
	Offset    int        `json:"offset"`
}

// Preset is a saved task (extension): a name, the configuration of the
// tasks it launches (what POST /tasks takes) and their input files.
type Preset struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Task       CreateTask `json:"task"`
	InputFiles []File     `json:"inputFiles"`
	UseCount   int        `json:"useCount"`
	LastUsedAt *time.Time `json:"lastUsedAt,omitempty"`
	CreatedAt  time.Time  `json:"createdAt"`
	UpdatedAt  time.Time  `json:"updatedAt"`
}

// PresetList is the answer of GET /presets.
type PresetList struct {
	Presets []Preset `json:"presets"`
}

// EvalRun is a run of an evaluation suite (`hivecrew eval run`), summed
// up from its results.json (extension: GET /evals). State is running,
// finished or interrupted (no end time, and results.json unchanged for
// longer than a live run leaves it); Planned is tasks × models × repeat,
// Done the results so far. A run whose results.json cannot be read has
// only its id, state, updatedAt and Error.
type EvalRun struct {
	ID        string     `json:"id"`
	Suite     string     `json:"suite"`
	Provider  string     `json:"provider"`
	Models    []string   `json:"models"`
	Repeat    int        `json:"repeat"`
	StartedAt *time.Time `json:"startedAt,omitempty"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
	State     string     `json:"state"`
	TaskCount int        `json:"taskCount"`
	// SuiteTaskCount is how many tasks the suite has: TaskCount run, the
	// rest left out by --only or unreadable (Problems).
	SuiteTaskCount int         `json:"suiteTaskCount"`
	Planned        int         `json:"planned"`
	Done           int         `json:"done"`
	Passed         int         `json:"passed"`
	Scores         []EvalScore `json:"scores"`
	Problems       int         `json:"problems"`
	Error          string      `json:"error,omitempty"`
}

// EvalScore is how one model of an eval run did: Passes of Runs, Rate
// their ratio (0 to 1).
type EvalScore struct {
	Model  string  `json:"model"`
	Runs   int     `json:"runs"`
	Passes int     `json:"passes"`
	Rate   float64 `json:"rate"`
}

// EvalRunList is the answer of GET /evals: the newest runs first, Total
// of them in all; Truncated says the list stops short of Total.
type EvalRunList struct {
	Runs      []EvalRun `json:"runs"`
	Total     int       `json:"total"`
	Truncated bool      `json:"truncated"`
}

// SavePreset is the body of POST /presets and PATCH /presets/:id: a name
// and either the task's configuration or a task to copy it (and its input
// files) from. PATCH changes the fields given.
type SavePreset struct {
	Name       string      `json:"name,omitempty"`
	Task       *CreateTask `json:"task,omitempty"`
	FromTaskID string      `json:"fromTaskId,omitempty"`
}

// RunPreset is the optional body of POST /presets/:id/run: more
// instructions added after the preset's description for this run only.
type RunPreset struct {
	ExtraInstructions string `json:"extraInstructions,omitempty"`
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

// Provider is an LLM provider; its API key is never sent back.
type Provider struct {
	ID              string  `json:"id"`
	DisplayName     string  `json:"displayName"`
	BaseURL         string  `json:"baseURL"`
	BackendMode     string  `json:"backendMode"`
	AuthMode        string  `json:"authMode"`
	IsDefault       bool    `json:"isDefault"`
	HasAPIKey       bool    `json:"hasAPIKey"`
	OrganizationID  string  `json:"organizationId,omitempty"`
	DefaultModelID  string  `json:"defaultModelId,omitempty"`
	TimeoutInterval float64 `json:"timeoutInterval,omitempty"`
	// DefaultReasoningEffort is the effort of its tasks that ask for none
	// (extension).
	DefaultReasoningEffort string `json:"defaultReasoningEffort,omitempty"`
	// Type is the protocol it speaks: openai-compatible, anthropic or
	// openai (extension).
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"createdAt"`
}

// Credential is a stored login (extension): its secrets are never sent.
type Credential struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Username    string    `json:"username,omitempty"`
	HasPassword bool      `json:"hasPassword"`
	HasTOTP     bool      `json:"hasTOTP"`
	AllowedApps []string  `json:"allowedApps"`
	CreatedAt   time.Time `json:"createdAt"`
}

// CredentialList is the answer of GET /credentials.
type CredentialList struct {
	Credentials []Credential `json:"credentials"`
}

// CredentialInput is the body of POST /credentials. Password and TOTPSeed
// are write-only.
type CredentialInput struct {
	Name        string   `json:"name"`
	Username    string   `json:"username,omitempty"`
	Password    string   `json:"password,omitempty"`
	TOTPSeed    string   `json:"totpSeed,omitempty"`
	AllowedApps []string `json:"allowedApps,omitempty"`
}

// OpenOutput is the body of POST /tasks/:id/outputs/:name/open: Folder
// shows the folder the output is in instead of opening it.
type OpenOutput struct {
	Folder bool `json:"folder,omitempty"`
}

// CredentialPatch is the body of PATCH /credentials/:id: each field given
// replaces the stored one. Password and TOTPSeed are write-only; "" removes
// one of them.
type CredentialPatch struct {
	Name        *string   `json:"name,omitempty"`
	Username    *string   `json:"username,omitempty"`
	Password    *string   `json:"password,omitempty"`
	TOTPSeed    *string   `json:"totpSeed,omitempty"`
	AllowedApps *[]string `json:"allowedApps,omitempty"`
}

// MCPServer is an MCP server the agents may use (extension). The values
// of its environment variables and headers are never sent: their names are.
type MCPServer struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	Command        string    `json:"command,omitempty"`
	Args           []string  `json:"args"`
	URL            string    `json:"url,omitempty"`
	EnvNames       []string  `json:"envNames"`
	HeaderNames    []string  `json:"headerNames"`
	Permission     string    `json:"permission"`
	TimeoutSeconds int       `json:"timeoutSeconds"`
	Enabled        bool      `json:"enabled"`
	CreatedAt      time.Time `json:"createdAt"`
}

// MCPServerList is the answer of GET /mcp-servers.
type MCPServerList struct {
	Servers []MCPServer `json:"servers"`
}

// MCPServerInput is the body of POST /mcp-servers. Env and Headers values
// are write-only.
type MCPServerInput struct {
	Name           string            `json:"name"`
	Command        string            `json:"command,omitempty"`
	Args           []string          `json:"args,omitempty"`
	URL            string            `json:"url,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	Permission     string            `json:"permission,omitempty"`
	TimeoutSeconds int               `json:"timeoutSeconds,omitempty"`
	Enabled        *bool             `json:"enabled,omitempty"`
}

// MCPServerPatch is the body of PATCH /mcp-servers/:id: each field given
// replaces the stored one. Env and Headers, when given, are the whole
// set: a value sets a name, null keeps its stored value, a name left out
// goes. Values are write-only.
type MCPServerPatch struct {
	Command        *string            `json:"command,omitempty"`
	Args           *[]string          `json:"args,omitempty"`
	URL            *string            `json:"url,omitempty"`
	Env            map[string]*string `json:"env"`
	Headers        map[string]*string `json:"headers"`
	Permission     *string            `json:"permission,omitempty"`
	TimeoutSeconds *int               `json:"timeoutSeconds,omitempty"`
	Enabled        *bool              `json:"enabled,omitempty"`
}

// MCPServerCheck is the answer of POST /mcp-servers/:id/check: the tools
// it offers, or why it cannot be used.
type MCPServerCheck struct {
	OK    bool     `json:"ok"`
	Tools []string `json:"tools"`
	Error string   `json:"error,omitempty"`
}

// Webhook is an address told of task events (extension). Its URL is
// answered with its path and query hidden (a Slack or Discord address is
// itself a secret), and its signing secret never.
type Webhook struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	URL  string `json:"url"`
	// Format is json, slack or discord.
	Format string `json:"format"`
	// Events it is sent (task.ended, task.question, task.permission,
	// task.review); empty: all.
	Events    []string  `json:"events"`
	HasSecret bool      `json:"hasSecret"`
	Enabled   bool      `json:"enabled"`
	CreatedAt time.Time `json:"createdAt"`
}

// WebhookList is the answer of GET /webhooks.
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// WebhookInput is the body of POST /webhooks. Secret is write-only.
type WebhookInput struct {
	Name    string   `json:"name"`
	URL     string   `json:"url"`
	Format  string   `json:"format,omitempty"`
	Events  []string `json:"events,omitempty"`
	Secret  string   `json:"secret,omitempty"`
	Enabled *bool    `json:"enabled,omitempty"`
}

// WebhookTest is the answer of POST /webhooks/:id/test: the receiver's
// answer, or why there was none.
type WebhookTest struct {
	OK bool `json:"ok"`
	// Status is the HTTP status it answered (0: none).
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
}

// ProviderInput is the body of POST /providers and PATCH /providers/:id
// (all fields optional there). APIKey is write-only. The Clear fields
// (PATCH) remove the key, the base URL or the organization.
type ProviderInput struct {
	DisplayName         *string  `json:"displayName,omitempty"`
	BaseURL             *string  `json:"baseURL,omitempty"`
	ClearBaseURL        *bool    `json:"clearBaseURL,omitempty"`
	APIKey              *string  `json:"apiKey,omitempty"`
	ClearAPIKey         *bool    `json:"clearAPIKey,omitempty"`
	OrganizationID      *string  `json:"organizationId,omitempty"`
	ClearOrganizationID *bool    `json:"clearOrganizationId,omitempty"`
	BackendMode         *string  `json:"backendMode,omitempty"`
	AuthMode            *string  `json:"authMode,omitempty"`
	IsDefault           *bool    `json:"isDefault,omitempty"`
	DefaultModelID      *string  `json:"defaultModelId,omitempty"`
	TimeoutInterval     *float64 `json:"timeoutInterval,omitempty"`
	// DefaultReasoningEffort ("" clears it) is an extension.
	DefaultReasoningEffort *string `json:"defaultReasoningEffort,omitempty"`
	// Type (extension) is openai-compatible (the default), anthropic or
	// openai. Changing it moves a base URL that was the old type's
	// vendor default to the new type's, and backendMode, unless given, to
	// the new type's default.
	Type *string `json:"type,omitempty"`
}

// ProviderList is the answer of GET /providers.
type ProviderList struct {
	Providers []Provider `json:"providers"`
}

// Model is one model a provider offers.
type Model struct {
	ID                  string              `json:"id"`
	Name                string              `json:"name"`
	ContextLength       *int                `json:"contextLength,omitempty"`
	ReasoningCapability ReasoningCapability `json:"reasoningCapability"`
	// SupportsVision says whether the model takes images, when the
	// provider says (extension).
	SupportsVision *bool `json:"supportsVision,omitempty"`
}

// ReasoningCapability says how a model's reasoning is controlled: Kind
// none, toggle (on or off) or effort (SupportedEfforts).
type ReasoningCapability struct {
	Kind             string   `json:"kind"`
	SupportedEfforts []string `json:"supportedEfforts"`
	DefaultEffort    *string  `json:"defaultEffort,omitempty"`
	DefaultEnabled   bool     `json:"defaultEnabled"`
}

// ModelList is the answer of GET /providers/:id/models.
type ModelList struct {
	Models []Model `json:"models"`
}

// ProviderTest is the answer of POST /providers/:id/test (extension).
type ProviderTest struct {
	OK        bool    `json:"ok"`
	Message   string  `json:"message"`
	LatencyMs float64 `json:"latencyMs"`
}

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

// SubagentInfo is a subagent of a task, as its parent's page lists it.
type SubagentInfo struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"`
	// Domain is "vm" or "host".
	Domain string `json:"domain,omitempty"`
}

// SkillList is the answer of GET /skills. Problems (extension) are the
// folders of the library that are not skills, each with why.
type SkillList struct {
	Skills   []Skill  `json:"skills"`
	Problems []string `json:"problems,omitempty"`
}

// Skill is a named instruction set an agent can be told to use.
// Instructions are sent by GET /skills/:name and the draft of a finished
// task (extension), and taken by POST and PUT.
type Skill struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	IsEnabled    bool   `json:"isEnabled"`
	Instructions string `json:"instructions,omitempty"`
}

// SkillImport is the body of POST /skills/import: a folder on this
// computer, or a git URL (extension).
type SkillImport struct {
	Path    string `json:"path,omitempty"`
	GitURL  string `json:"gitUrl,omitempty"`
	Replace bool   `json:"replace,omitempty"`
}

// WebSearch is the answer of GET /web-search: the backend from Settings,
// and whether the search API key is stored (extension). PUT takes APIKey.
type WebSearch struct {
	Backend   string `json:"backend"`
	URL       string `json:"url,omitempty"`
	HasAPIKey bool   `json:"hasApiKey"`
	APIKey    string `json:"apiKey,omitempty"`
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

// LoginLink is the answer of POST /auth/login-link: a one-time link that
// opens the web UI with a session.
type LoginLink struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Items returns the listed tasks as Tasks.
func (l TaskList) Items() []Task {
	out := make([]Task, len(l.Tasks))
	for i, t := range l.Tasks {
		out[i] = t.Task
	}
	return out
}

// maxTitleRunes bounds a title derived from a description.
const maxTitleRunes = 80

// TitleFrom derives a title from a description: its first line, cut to
// 80 characters.
func TitleFrom(description string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(description), "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) <= maxTitleRunes {
		return line
	}
	r := []rune(line)
	return strings.TrimSpace(string(r[:maxTitleRunes-1])) + "…"
}

// EndWords says a task's terminal status as people say it ("timed out",
// "stopped at its step limit").
func EndWords(status string) string {
	switch status {
	case "timedOut":
		return "timed out"
	case "maxIterations":
		return "stopped at its step limit"
	case "planFailed":
		return "failed to plan"
	}
	return status
}
