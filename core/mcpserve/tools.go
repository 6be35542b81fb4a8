package mcpserve

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hivecrew/hivecrew/core/client"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Bounds of the tools' inputs (the API checks its own again).
const (
	maxName        = 200 // a provider, model or template
	maxPath        = 4096
	maxHostFolders = 16
	maxAnswer      = 10_000
	maxSearch      = 200
	maxListLimit   = 100
	defaultLimit   = 20
	maxOffset      = 1_000_000
	// taskIDPattern is a task's id (a UUID).
	taskIDPattern = `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`
	// eventIDPattern is a question's or a permission request's id.
	eventIDPattern = `^[A-Za-z0-9_.:-]{1,64}$`
)

type runTaskInput struct {
	Description     string   `json:"description" jsonschema:"what the agent should do, in words; files it saves in outbox/ become the task's outputs"`
	ProviderName    string   `json:"providerName,omitempty" jsonschema:"the LLM provider's name (default: Hivecrew's default provider)"`
	ModelID         string   `json:"modelId,omitempty" jsonschema:"the model's id (default: the provider's default model)"`
	TemplateID      string   `json:"templateId,omitempty" jsonschema:"the VM template's id or name (default: the default template)"`
	OutputDirectory string   `json:"outputDirectory,omitempty" jsonschema:"a folder of this computer the outputs are copied into (default: Settings')"`
	HostFolders     []string `json:"hostFolders,omitempty" jsonschema:"folders of this computer the agent works on (copied into its VM; its changes wait for the user's review)"`
	NetworkMode     string   `json:"networkMode,omitempty" jsonschema:"offline or internet (default: Settings')"`
	TimeoutMinutes  int      `json:"timeoutMinutes,omitempty" jsonschema:"the task's time limit in minutes (0: Settings')"`
	MaxIterations   int      `json:"maxIterations,omitempty" jsonschema:"the most steps the agent may take (0: Settings')"`
	WaitSeconds     int      `json:"waitSeconds,omitempty" jsonschema:"how long to wait for the task to end or need you, in seconds; 0 returns at once with its id"`
}

type taskInput struct {
	TaskID      string `json:"taskId" jsonschema:"the task's id"`
	WaitSeconds int    `json:"waitSeconds,omitempty" jsonschema:"wait up to this many seconds for the task to end or need you (0: answer at once)"`
}

type taskRef struct {
	TaskID string `json:"taskId" jsonschema:"the task's id"`
}

type listInput struct {
	Status []string `json:"status,omitempty" jsonschema:"only tasks in these statuses"`
	Search string   `json:"search,omitempty" jsonschema:"only tasks whose title or description contains this"`
	Limit  int      `json:"limit,omitempty" jsonschema:"how many tasks, newest first"`
	Offset int      `json:"offset,omitempty" jsonschema:"how many to skip"`
}

// TaskList is list_tasks' answer.
type TaskList struct {
	Tasks []Task `json:"tasks"`
	// Total counts the tasks that match, of which Tasks are a page.
	Total  int64 `json:"total"`
	Offset int   `json:"offset"`
}

type answerInput struct {
	TaskID     string `json:"taskId" jsonschema:"the task's id"`
	QuestionID string `json:"questionId" jsonschema:"the question's id (question.id of get_task or run_task)"`
	Answer     string `json:"answer" jsonschema:"your answer, in words"`
}

type approveInput struct {
	TaskID       string `json:"taskId" jsonschema:"the task's id"`
	PermissionID string `json:"permissionId" jsonschema:"the request's id (permission.id of get_task or run_task)"`
	Approved     bool   `json:"approved" jsonschema:"true lets the tool call run; false denies it (the agent is told)"`
}

// taskStatuses are the statuses list_tasks may filter by.
var taskStatuses = []any{"queued", "planning", "planReview", "waitingForVM", "running", "paused",
	"completed", "failed", "cancelled", "timedOut", "maxIterations", "planFailed", "writebackReview"}

func (s *server) addTools(srv *mcp.Server) {
	no, yes := false, true
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "run_task",
		Description: "Start a Hivecrew task: an agent does it in a fresh sandboxed VM. Waits up to waitSeconds for it to end or to need you (a question, a tool to approve), then returns its state; a task still going keeps going (get_task waits again).",
		InputSchema: schema[runTaskInput](
			str("description", 1, wire.MaxTaskDescription),
			str("providerName", 0, maxName), str("modelId", 0, maxName), str("templateId", 0, maxName),
			str("outputDirectory", 0, maxPath), list("hostFolders", maxHostFolders, maxPath),
			oneOf("networkMode", "offline", "internet"),
			integer("timeoutMinutes", 0, wire.MaxTaskTimeoutMinutes, 0),
			integer("maxIterations", 0, wire.MaxTaskIterations, 0),
			integer("waitSeconds", 0, MaxWait, DefaultWait)),
		Annotations: &mcp.ToolAnnotations{Title: "Run a task", DestructiveHint: &no, OpenWorldHint: &yes},
	}, s.runTask)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "get_task",
		Description: "A task's state: status, result, and the question or tool approval it waits for. With waitSeconds, waits for it to end or to need you.",
		InputSchema: schema[taskInput](taskID("taskId"), integer("waitSeconds", 0, MaxWait, 0)),
		Annotations: &mcp.ToolAnnotations{Title: "Get a task", ReadOnlyHint: true},
	}, s.getTask)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "list_tasks",
		Description: "Hivecrew's tasks, newest first, with their status and result.",
		InputSchema: schema[listInput](list("status", len(taskStatuses), 0, taskStatuses...), str("search", 0, maxSearch),
			integer("limit", 1, maxListLimit, defaultLimit), integer("offset", 0, maxOffset, 0)),
		Annotations: &mcp.ToolAnnotations{Title: "List tasks", ReadOnlyHint: true},
	}, s.listTasks)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "answer_question",
		Description: "Answer the question a task's agent asked (question.id of get_task or run_task); the agent goes on.",
		InputSchema: schema[answerInput](taskID("taskId"), pattern("questionId", eventIDPattern), str("answer", 1, maxAnswer)),
		Annotations: &mcp.ToolAnnotations{Title: "Answer a question", DestructiveHint: &no, OpenWorldHint: &no},
	}, s.answer)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "approve_tool",
		Description: "Approve (approved true) or deny (false) the tool call a task's agent waits to make (permission.id of get_task or run_task).",
		InputSchema: schema[approveInput](taskID("taskId"), pattern("permissionId", eventIDPattern)),
		Annotations: &mcp.ToolAnnotations{Title: "Approve or deny a tool call", DestructiveHint: &yes, OpenWorldHint: &no},
	}, s.approve)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "cancel_task",
		Description: "Cancel a task: its agent stops and its VM is removed.",
		InputSchema: schema[taskRef](taskID("taskId")),
		Annotations: &mcp.ToolAnnotations{Title: "Cancel a task", DestructiveHint: &yes, IdempotentHint: true, OpenWorldHint: &no},
	}, s.cancel)
	s.addOutputTools(srv)
}

func (s *server) runTask(ctx context.Context, req *mcp.CallToolRequest, in runTaskInput) (*mcp.CallToolResult, Task, error) {
	h, err := s.helper(req.Extra)
	if err != nil {
		return nil, Task{}, err
	}
	t, err := h.CreateTask(ctx, wire.CreateTask{
		Description: in.Description, ProviderName: in.ProviderName, ModelID: in.ModelID, TemplateID: in.TemplateID,
		OutputDirectory: in.OutputDirectory, HostFolders: in.HostFolders, NetworkMode: in.NetworkMode,
		TimeoutMinutes: in.TimeoutMinutes, MaxIterations: in.MaxIterations,
	})
	if err != nil {
		return nil, Task{}, callerError(err)
	}
	got, err := s.wait(ctx, h, t.ID, seconds(in.WaitSeconds), progress(ctx, req))
	if err != nil {
		return nil, Task{}, callerError(fmt.Errorf("task %s was started, but following it failed (get_task follows it again): %w", t.ID, err))
	}
	return nil, taskView(got, maxResult), nil
}

func (s *server) getTask(ctx context.Context, req *mcp.CallToolRequest, in taskInput) (*mcp.CallToolResult, Task, error) {
	h, err := s.helper(req.Extra)
	if err != nil {
		return nil, Task{}, err
	}
	t, err := s.wait(ctx, h, in.TaskID, seconds(in.WaitSeconds), progress(ctx, req))
	if err != nil {
		return nil, Task{}, callerError(err)
	}
	return nil, taskView(t, maxResult), nil
}

func (s *server) listTasks(ctx context.Context, req *mcp.CallToolRequest, in listInput) (*mcp.CallToolResult, TaskList, error) {
	h, err := s.helper(req.Extra)
	if err != nil {
		return nil, TaskList{}, err
	}
	l, err := h.ListTasks(ctx, client.TaskQuery{Statuses: in.Status, Search: in.Search, Limit: max(in.Limit, 1), Offset: in.Offset})
	if err != nil {
		return nil, TaskList{}, callerError(err)
	}
	out := TaskList{Tasks: []Task{}, Total: l.Total, Offset: l.Offset}
	for i, t := range l.Tasks {
		if i == maxListLimit {
			break
		}
		out.Tasks = append(out.Tasks, taskView(t.Task, maxListResult))
	}
	return nil, out, nil
}

func (s *server) answer(ctx context.Context, req *mcp.CallToolRequest, in answerInput) (*mcp.CallToolResult, Task, error) {
	return s.act(ctx, req, in.TaskID, func(h Helper) error { return h.Answer(ctx, in.TaskID, in.QuestionID, in.Answer) })
}

func (s *server) approve(ctx context.Context, req *mcp.CallToolRequest, in approveInput) (*mcp.CallToolResult, Task, error) {
	return s.act(ctx, req, in.TaskID, func(h Helper) error { return h.Respond(ctx, in.TaskID, in.PermissionID, in.Approved) })
}

func (s *server) cancel(ctx context.Context, req *mcp.CallToolRequest, in taskRef) (*mcp.CallToolResult, Task, error) {
	return s.act(ctx, req, in.TaskID, func(h Helper) error {
		_, err := h.TaskAction(ctx, in.TaskID, wire.TaskAction{Action: wire.ActionCancel})
		return err
	})
}

// act does something to a task and returns the task as it is then.
func (s *server) act(ctx context.Context, req *mcp.CallToolRequest, id string, do func(Helper) error) (*mcp.CallToolResult, Task, error) {
	h, err := s.helper(req.Extra)
	if err != nil {
		return nil, Task{}, err
	}
	if err := do(h); err != nil {
		return nil, Task{}, callerError(err)
	}
	t, err := h.Task(ctx, id)
	if err != nil {
		return nil, Task{}, callerError(err)
	}
	return nil, taskView(t, maxResult), nil
}
