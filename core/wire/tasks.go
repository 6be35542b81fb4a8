package wire

import (
	"strings"
	"time"
	"unicode/utf8"
)

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

// OpenOutput is the body of POST /tasks/:id/outputs/:name/open: Folder
// shows the folder the output is in instead of opening it.
type OpenOutput struct {
	Folder bool `json:"folder,omitempty"`
}

// SubagentInfo is a subagent of a task, as its parent's page lists it.
type SubagentInfo struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"`
	// Domain is "vm" or "host".
	Domain string `json:"domain,omitempty"`
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
