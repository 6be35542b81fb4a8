package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/hivecrew/hivecrew/core/wire"
)

// CreateTask queues a task; with files it is sent as multipart, each file
// as a "files" part.
func (c *Client) CreateTask(ctx context.Context, in wire.CreateTask, files ...string) (wire.Task, error) {
	var t wire.Task
	if len(files) == 0 {
		return t, c.call(ctx, http.MethodPost, "/api/v1/tasks", in, &t)
	}
	return t, c.multipart(ctx, "/api/v1/tasks", taskFields(in), files, &t)
}

// taskFields are a new task's multipart form fields.
func taskFields(in wire.CreateTask) []field {
	fields := []field{
		{"description", in.Description}, {"providerName", in.ProviderName}, {"modelId", in.ModelID},
		{"outputDirectory", in.OutputDirectory}, {"templateId", in.TemplateID}, {"networkMode", in.NetworkMode},
		{"reasoningEffort", in.ReasoningEffort}, {"continuationSourceTaskId", in.ContinuationSourceTaskID},
		{"setupCommand", in.SetupCommand}, {"checkCommand", in.CheckCommand},
	}
	if in.PlanFirst {
		fields = append(fields, field{"planFirst", "true"})
	}
	if in.ReasoningEnabled != nil {
		fields = append(fields, field{"reasoningEnabled", strconv.FormatBool(*in.ReasoningEnabled)})
	}
	if in.TimeoutMinutes != 0 {
		fields = append(fields, field{"timeoutMinutes", strconv.Itoa(in.TimeoutMinutes)})
	}
	if in.MaxIterations != 0 {
		fields = append(fields, field{"maxIterations", strconv.Itoa(in.MaxIterations)})
	}
	if len(in.ToolPolicy) > 0 {
		b, _ := json.Marshal(in.ToolPolicy)
		fields = append(fields, field{"toolPolicy", string(b)})
	}
	for _, h := range in.AllowHosts {
		fields = append(fields, field{"allowHosts", h})
	}
	for _, f := range in.HostFolders {
		fields = append(fields, field{"hostFolders", f})
	}
	if in.BudgetUSD != nil {
		fields = append(fields, field{"budgetUSD", strconv.FormatFloat(*in.BudgetUSD, 'f', -1, 64)})
	}
	if in.BudgetTokens != nil {
		fields = append(fields, field{"budgetTokens", strconv.FormatInt(*in.BudgetTokens, 10)})
	}
	if in.Provisioning != nil {
		b, _ := json.Marshal(in.Provisioning)
		fields = append(fields, field{"provisioning", string(b)})
	}
	return fields
}

// CreateTaskBatch queues one task per copy of every target, with the
// same input files.
func (c *Client) CreateTaskBatch(ctx context.Context, in wire.CreateTaskBatch, files ...string) (wire.TaskBatch, error) {
	var b wire.TaskBatch
	if len(files) == 0 {
		return b, c.call(ctx, http.MethodPost, "/api/v1/tasks/batch", in, &b)
	}
	targets, err := json.Marshal(in.Targets)
	if err != nil {
		return b, err
	}
	return b, c.multipart(ctx, "/api/v1/tasks/batch", append(taskFields(in.CreateTask), field{"targets", string(targets)}), files, &b)
}

// TaskQuery selects tasks for ListTasks.
type TaskQuery struct {
	Statuses      []string
	Limit, Offset int
	Sort, Order   string
	Search        string
}

// ListTasks lists tasks.
func (c *Client) ListTasks(ctx context.Context, q TaskQuery) (wire.TaskList, error) {
	v := url.Values{}
	if len(q.Statuses) > 0 {
		v.Set("status", strings.Join(q.Statuses, ","))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Offset > 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	for k, s := range map[string]string{"sort": q.Sort, "order": q.Order, "search": q.Search} {
		if s != "" {
			v.Set(k, s)
		}
	}
	var out wire.TaskList
	return out, c.call(ctx, http.MethodGet, "/api/v1/tasks?"+v.Encode(), nil, &out)
}

// Task returns a task.
func (c *Client) Task(ctx context.Context, id string) (wire.Task, error) {
	var t wire.Task
	return t, c.call(ctx, http.MethodGet, "/api/v1/tasks/"+esc(id), nil, &t)
}

// TaskAction applies an action (cancel, pause, resume, rerun, approve_plan,
// edit_plan, cancel_plan) and returns the task (the new one for rerun).
func (c *Client) TaskAction(ctx context.Context, id string, a wire.TaskAction) (wire.Task, error) {
	var t wire.Task
	return t, c.call(ctx, http.MethodPatch, "/api/v1/tasks/"+esc(id), a, &t)
}

// DeleteTask deletes a task and all the helper keeps of it; one that has
// not ended is cancelled first with cancel, else refused (a conflict).
func (c *Client) DeleteTask(ctx context.Context, id string, cancel bool) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/tasks/"+esc(id)+"?cancel="+strconv.FormatBool(cancel), nil, nil)
}

// OpenOutput opens a task's output, as saved to its output folder, on the
// helper's computer with its default application, or with folder shows
// the folder it is in.
func (c *Client) OpenOutput(ctx context.Context, id, name string, folder bool) error {
	return c.call(ctx, http.MethodPost, "/api/v1/tasks/"+esc(id)+"/outputs/"+esc(name)+"/open", wire.OpenOutput{Folder: folder}, nil)
}

// TaskFiles lists a task's files.
func (c *Client) TaskFiles(ctx context.Context, id string) (wire.TaskFiles, error) {
	var f wire.TaskFiles
	return f, c.call(ctx, http.MethodGet, "/api/v1/tasks/"+esc(id)+"/files", nil, &f)
}

// Download streams a task's file (kind "output", "input" or "" for either).
func (c *Client) Download(ctx context.Context, id, name, kind string, w io.Writer) error {
	path := "/api/v1/tasks/" + esc(id) + "/files/" + esc(name)
	if kind != "" {
		path += "?type=" + url.QueryEscape(kind)
	}
	return c.stream(ctx, path, w)
}

// CheckResult returns how a task's check command ended (not found
// when it has not run).
func (c *Client) CheckResult(ctx context.Context, id string) (wire.CheckResult, error) {
	var res wire.CheckResult
	return res, c.call(ctx, http.MethodGet, "/api/v1/tasks/"+esc(id)+"/check", nil, &res)
}
