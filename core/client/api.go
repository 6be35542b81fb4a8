package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hivecrew/hivecrew/core/config"
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/wire"
)

// call sends a JSON request (body may be nil) and decodes a JSON answer
// into out (may be nil); a status outside 2xx is an error of its class.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		r = bytes.NewReader(b)
	}
	return c.callBody(ctx, method, path, r, "application/json", out)
}

// callBody is call with a body of contentType as it is.
func (c *Client) callBody(ctx context.Context, method, path string, r io.Reader, contentType string, out any) error {
	resp, err := c.send(ctx, method, path, r, contentType)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return decodeError(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
	}
	return nil
}

func (c *Client) send(ctx context.Context, method, path string, body io.Reader, contentType string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, unreachable(err)
	}
	return resp, nil
}

func esc(s string) string { return url.PathEscape(s) }

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

// field is one multipart form field; a name may repeat.
type field struct{ name, value string }

// multipart streams fields and files to path and decodes the answer.
func (c *Client) multipart(ctx context.Context, path string, fields []field, files []string, out any) error {
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return fmt.Errorf("input file: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("input file %s is not a regular file", f)
		}
	}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			for _, f := range fields {
				if f.value == "" {
					continue
				}
				if err := mw.WriteField(f.name, f.value); err != nil {
					return err
				}
			}
			for _, f := range files {
				part, err := mw.CreateFormFile("files", filepath.Base(f))
				if err != nil {
					return err
				}
				src, err := os.Open(f)
				if err != nil {
					return err
				}
				_, err = io.Copy(part, src)
				src.Close()
				if err != nil {
					return err
				}
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	resp, err := c.send(ctx, http.MethodPost, path, pr, mw.FormDataContentType())
	pr.Close()
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return decodeError(resp)
	}
	return json.NewDecoder(resp.Body).Decode(out)
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

// Screenshot streams a task's latest screenshot.
func (c *Client) Screenshot(ctx context.Context, id string, w io.Writer) error {
	return c.stream(ctx, "/api/v1/tasks/"+esc(id)+"/screenshot", w)
}

// Export streams a task's session as json, markdown or html.
func (c *Client) Export(ctx context.Context, id, format string, w io.Writer) error {
	return c.stream(ctx, "/api/v1/tasks/"+esc(id)+"/export?format="+url.QueryEscape(format), w)
}

func (c *Client) stream(ctx context.Context, path string, w io.Writer) error {
	resp, err := c.send(ctx, http.MethodGet, path, nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return decodeError(resp)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

// Activity returns a task's events after seq since.
func (c *Client) Activity(ctx context.Context, id string, since int64) (wire.Activity, error) {
	var a wire.Activity
	return a, c.call(ctx, http.MethodGet, fmt.Sprintf("/api/v1/tasks/%s/activity?since=%d", esc(id), since), nil, &a)
}

// Events follows a task's event stream (SSE) from seq since, calling fn
// for each event, until the stream ends after the terminal status, fn
// returns an error, or ctx ends.
func (c *Client) Events(ctx context.Context, id string, since int64, fn func(wire.Event) error) error {
	resp, err := c.send(ctx, http.MethodGet, fmt.Sprintf("/api/v1/tasks/%s/events?since=%d", esc(id), since), nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return decodeError(resp)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var (
		data  []byte
		event string
	)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		case line == "" && event == "error":
			// The helper could not read the log: its message is a JSON string.
			var msg string
			if json.Unmarshal(data, &msg) != nil {
				msg = string(data)
			}
			return errdefs.Unavailablef("event stream: %s", msg)
		case line == "" && len(data) > 0:
			event = ""
			var e wire.Event
			if err := json.Unmarshal(data, &e); err != nil {
				return fmt.Errorf("event stream: %w", err)
			}
			data = data[:0]
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("event stream: %w", err)
	}
	return nil
}

// Question returns the pending question, or nil.
func (c *Client) Question(ctx context.Context, id string) (*wire.Question, error) {
	return optional[wire.Question](ctx, c, "/api/v1/tasks/"+esc(id)+"/question")
}

// optional gets a resource that may be absent (204 No Content: nil).
func optional[T any](ctx context.Context, c *Client, path string) (*T, error) {
	resp, err := c.send(ctx, http.MethodGet, path, nil, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNoContent:
		return nil, nil
	case http.StatusOK:
		var v T
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			return nil, fmt.Errorf("GET %s: decode answer: %w", path, err)
		}
		return &v, nil
	}
	return nil, decodeError(resp)
}

// Answer answers a question.
func (c *Client) Answer(ctx context.Context, id, questionID, answer string) error {
	return c.call(ctx, http.MethodPost, "/api/v1/tasks/"+esc(id)+"/question/answer", wire.Answer{QuestionID: questionID, Answer: answer}, nil)
}

// Writeback returns the review of a task's changes to its host folders,
// or nil when none waits.
func (c *Client) Writeback(ctx context.Context, id string) (*wire.WritebackReview, error) {
	return optional[wire.WritebackReview](ctx, c, "/api/v1/tasks/"+esc(id)+"/writeback")
}

// CheckResult returns how a task's check command ended (not found
// when it has not run).
func (c *Client) CheckResult(ctx context.Context, id string) (wire.CheckResult, error) {
	var res wire.CheckResult
	return res, c.call(ctx, http.MethodGet, "/api/v1/tasks/"+esc(id)+"/check", nil, &res)
}

// DecideWriteback approves (writes to the host) or discards a task's
// pending changes to its host folders: those of itemIDs, or all.
func (c *Client) DecideWriteback(ctx context.Context, id string, approve bool, itemIDs []string) (wire.Task, error) {
	a := wire.TaskAction{Action: wire.ActionDiscardWriteback, ItemIDs: itemIDs}
	if approve {
		a.Action = wire.ActionApproveWriteback
	}
	return c.TaskAction(ctx, id, a)
}

// Permission returns the pending permission request, or nil.
func (c *Client) Permission(ctx context.Context, id string) (*wire.Permission, error) {
	return optional[wire.Permission](ctx, c, "/api/v1/tasks/"+esc(id)+"/permission")
}

// Respond approves or denies a permission request.
func (c *Client) Respond(ctx context.Context, id, permissionID string, approved bool) error {
	return c.call(ctx, http.MethodPost, "/api/v1/tasks/"+esc(id)+"/permission/respond", wire.PermissionResponse{PermissionID: permissionID, Approved: &approved}, nil)
}

// Instruct adds instructions to a running agent.
func (c *Client) Instruct(ctx context.Context, id, text string) error {
	return c.call(ctx, http.MethodPost, "/api/v1/tasks/"+esc(id)+"/instructions", wire.Instructions{Text: text}, nil)
}

// Takeover starts ("start") or ends ("end") a takeover.
func (c *Client) Takeover(ctx context.Context, id, action, instructions string) (wire.Task, error) {
	var t wire.Task
	return t, c.call(ctx, http.MethodPost, "/api/v1/tasks/"+esc(id)+"/takeover", wire.Takeover{Action: action, Instructions: instructions}, &t)
}

// Input sends a pointer or keyboard event during a takeover.
func (c *Client) Input(ctx context.Context, id string, in wire.Input) error {
	return c.call(ctx, http.MethodPost, "/api/v1/tasks/"+esc(id)+"/input", in, nil)
}

// StopAll is the kill switch.
func (c *Client) StopAll(ctx context.Context) (wire.StopAll, error) {
	var s wire.StopAll
	return s, c.call(ctx, http.MethodPost, "/api/v1/system/stop-all", nil, &s)
}

// Status returns the helper's status.
func (c *Client) Status(ctx context.Context) (wire.Status, error) {
	var s wire.Status
	return s, c.call(ctx, http.MethodGet, "/api/v1/system/status", nil, &s)
}

// SystemConfig returns the helper's configuration summary.
func (c *Client) SystemConfig(ctx context.Context) (wire.SystemConfig, error) {
	var s wire.SystemConfig
	return s, c.call(ctx, http.MethodGet, "/api/v1/system/config", nil, &s)
}

// Settings returns the settings.
func (c *Client) Settings(ctx context.Context) (config.Settings, error) {
	var s config.Settings
	return s, c.call(ctx, http.MethodGet, "/api/v1/settings", nil, &s)
}

// PatchSettings changes some settings (a JSON object of the fields to set).
func (c *Client) PatchSettings(ctx context.Context, patch any) (config.Settings, error) {
	var s config.Settings
	return s, c.call(ctx, http.MethodPatch, "/api/v1/settings", patch, &s)
}

// Providers lists the providers.
func (c *Client) Providers(ctx context.Context) ([]wire.Provider, error) {
	var l wire.ProviderList
	return l.Providers, c.call(ctx, http.MethodGet, "/api/v1/providers", nil, &l)
}

// Provider returns one provider (by ID or name).
func (c *Client) Provider(ctx context.Context, id string) (wire.Provider, error) {
	var p wire.Provider
	return p, c.call(ctx, http.MethodGet, "/api/v1/providers/"+esc(id), nil, &p)
}

// AddProvider adds a provider.
func (c *Client) AddProvider(ctx context.Context, in wire.ProviderInput) (wire.Provider, error) {
	var p wire.Provider
	return p, c.call(ctx, http.MethodPost, "/api/v1/providers", in, &p)
}

// UpdateProvider changes a provider (by ID or name).
func (c *Client) UpdateProvider(ctx context.Context, id string, in wire.ProviderInput) (wire.Provider, error) {
	var p wire.Provider
	return p, c.call(ctx, http.MethodPatch, "/api/v1/providers/"+esc(id), in, &p)
}

// RemoveProvider deletes a provider (by ID or name).
func (c *Client) RemoveProvider(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/providers/"+esc(id), nil, nil)
}

// Credentials lists the stored credentials (never their secrets).
func (c *Client) Credentials(ctx context.Context) ([]wire.Credential, error) {
	var l wire.CredentialList
	return l.Credentials, c.call(ctx, http.MethodGet, "/api/v1/credentials", nil, &l)
}

// Provisioning returns what VMs are given as they start (never a secret's
// value).
func (c *Client) Provisioning(ctx context.Context) (wire.Provisioning, error) {
	var p wire.Provisioning
	return p, c.call(ctx, http.MethodGet, "/api/v1/provisioning", nil, &p)
}

// SetProvisioning replaces the provisioning with body, a JSON object in
// wire.Provisioning's shape (sent as it is, so that the helper judges it).
func (c *Client) SetProvisioning(ctx context.Context, body json.RawMessage) (wire.Provisioning, error) {
	var p wire.Provisioning
	return p, c.call(ctx, http.MethodPut, "/api/v1/provisioning", body, &p)
}

// AddCredential stores a credential.
func (c *Client) AddCredential(ctx context.Context, in wire.CredentialInput) (wire.Credential, error) {
	var cr wire.Credential
	return cr, c.call(ctx, http.MethodPost, "/api/v1/credentials", in, &cr)
}

// EditCredential changes a credential (by ID or name): the fields given.
func (c *Client) EditCredential(ctx context.Context, id string, p wire.CredentialPatch) (wire.Credential, error) {
	var cr wire.Credential
	return cr, c.call(ctx, http.MethodPatch, "/api/v1/credentials/"+esc(id), p, &cr)
}

// ImportCredentials stores the logins of a browser's password export
// (CSV): all of them, or none.
func (c *Client) ImportCredentials(ctx context.Context, csv io.Reader) ([]wire.Credential, error) {
	var l wire.CredentialList
	return l.Credentials, c.callBody(ctx, http.MethodPost, "/api/v1/credentials/import", csv, "text/csv", &l)
}

// RemoveCredential deletes a credential (by ID or name) and its secrets.
func (c *Client) RemoveCredential(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/credentials/"+esc(id), nil, nil)
}

// TestProvider checks a provider's endpoint and key.
func (c *Client) TestProvider(ctx context.Context, id string) (wire.ProviderTest, error) {
	var r wire.ProviderTest
	return r, c.call(ctx, http.MethodPost, "/api/v1/providers/"+esc(id)+"/test", nil, &r)
}

// Models lists a provider's models.
func (c *Client) Models(ctx context.Context, id string) ([]wire.Model, error) {
	var l wire.ModelList
	return l.Models, c.call(ctx, http.MethodGet, "/api/v1/providers/"+esc(id)+"/models", nil, &l)
}

// Templates lists the templates.
func (c *Client) Templates(ctx context.Context) (wire.TemplateList, error) {
	var l wire.TemplateList
	return l, c.call(ctx, http.MethodGet, "/api/v1/templates", nil, &l)
}

// VMs lists the VMs.
func (c *Client) VMs(ctx context.Context) ([]wire.VM, error) {
	var l wire.VMList
	return l.VMs, c.call(ctx, http.MethodGet, "/api/v1/vms", nil, &l)
}

// StopVM stops and removes a VM (its task fails).
func (c *Client) StopVM(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodPost, "/api/v1/vms/"+esc(id)+"/stop", nil, nil)
}

// OpenVM boots a developer VM of a template: no agent, the user's by hand
// until RemoveVM.
func (c *Client) OpenVM(ctx context.Context, templateID string) (wire.VM, error) {
	var v wire.VM
	return v, c.call(ctx, http.MethodPost, "/api/v1/vms", wire.OpenVM{TemplateID: templateID}, &v)
}

// RemoveVM stops and removes a VM.
func (c *Client) RemoveVM(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/vms/"+esc(id), nil, nil)
}

// CreateSchedule adds a schedule, with input files as multipart.
func (c *Client) CreateSchedule(ctx context.Context, in wire.CreateSchedule, files ...string) (wire.Schedule, error) {
	var s wire.Schedule
	if strings.TrimSpace(in.Title) == "" {
		in.Title = wire.TitleFrom(in.Description) // the API needs one
	}
	return s, c.postWithFiles(ctx, "/api/v1/schedules", "schedule", in, files, &s)
}

// postWithFiles POSTs body as JSON, or with files as multipart: body's
// JSON in a part named part, and "files" parts.
func (c *Client) postWithFiles(ctx context.Context, path, part string, body any, files []string, out any) error {
	if len(files) == 0 {
		return c.call(ctx, http.MethodPost, path, body, out)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return c.multipart(ctx, path, []field{{part, string(b)}}, files, out)
}

// Schedules lists schedules.
func (c *Client) Schedules(ctx context.Context) (wire.ScheduleList, error) {
	var l wire.ScheduleList
	return l, c.call(ctx, http.MethodGet, "/api/v1/schedules?limit=200", nil, &l)
}

// UpdateSchedule changes a schedule.
func (c *Client) UpdateSchedule(ctx context.Context, id string, in wire.CreateSchedule) (wire.Schedule, error) {
	var s wire.Schedule
	return s, c.call(ctx, http.MethodPatch, "/api/v1/schedules/"+esc(id), in, &s)
}

// RemoveSchedule deletes a schedule.
func (c *Client) RemoveSchedule(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/schedules/"+esc(id), nil, nil)
}

// RunSchedule creates a schedule's task now.
func (c *Client) RunSchedule(ctx context.Context, id string) (wire.Task, error) {
	var t wire.Task
	return t, c.call(ctx, http.MethodPost, "/api/v1/schedules/"+esc(id)+"/run", nil, &t)
}

// CreatePreset saves a preset, with input files as multipart.
func (c *Client) CreatePreset(ctx context.Context, in wire.SavePreset, files ...string) (wire.Preset, error) {
	var p wire.Preset
	return p, c.postWithFiles(ctx, "/api/v1/presets", "preset", in, files, &p)
}

// Presets lists the presets, most recently used first.
func (c *Client) Presets(ctx context.Context) (wire.PresetList, error) {
	var l wire.PresetList
	return l, c.call(ctx, http.MethodGet, "/api/v1/presets", nil, &l)
}

// Preset returns a preset by id or name.
func (c *Client) Preset(ctx context.Context, idOrName string) (wire.Preset, error) {
	var p wire.Preset
	return p, c.call(ctx, http.MethodGet, "/api/v1/presets/"+esc(idOrName), nil, &p)
}

// UpdatePreset renames a preset or replaces its task.
func (c *Client) UpdatePreset(ctx context.Context, idOrName string, in wire.SavePreset) (wire.Preset, error) {
	var p wire.Preset
	return p, c.call(ctx, http.MethodPatch, "/api/v1/presets/"+esc(idOrName), in, &p)
}

// RemovePreset deletes a preset.
func (c *Client) RemovePreset(ctx context.Context, idOrName string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/presets/"+esc(idOrName), nil, nil)
}

// RunPreset launches a preset's task.
func (c *Client) RunPreset(ctx context.Context, idOrName string, in wire.RunPreset) (wire.Task, error) {
	var t wire.Task
	return t, c.call(ctx, http.MethodPost, "/api/v1/presets/"+esc(idOrName)+"/run", in, &t)
}

// CreateAPIKey creates an API key; the key is in the answer only.
func (c *Client) CreateAPIKey(ctx context.Context, name string) (wire.CreatedAPIKey, error) {
	var k wire.CreatedAPIKey
	return k, c.call(ctx, http.MethodPost, "/api/v1/apikeys", map[string]string{"name": name}, &k)
}

// APIKeys lists API keys.
func (c *Client) APIKeys(ctx context.Context) ([]wire.APIKey, error) {
	var l wire.APIKeyList
	return l.Keys, c.call(ctx, http.MethodGet, "/api/v1/apikeys", nil, &l)
}

// RevokeAPIKey revokes a key by ID or prefix.
func (c *Client) RevokeAPIKey(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/apikeys/"+esc(id), nil, nil)
}

// LoginLink mints a one-time link to the web UI (unix socket only).
func (c *Client) LoginLink(ctx context.Context) (wire.LoginLink, error) {
	var l wire.LoginLink
	return l, c.call(ctx, http.MethodPost, "/api/v1/auth/login-link", nil, &l)
}

// MCPServers lists the configured MCP servers (never their secret values).
func (c *Client) MCPServers(ctx context.Context) ([]wire.MCPServer, error) {
	var l wire.MCPServerList
	return l.Servers, c.call(ctx, http.MethodGet, "/api/v1/mcp-servers", nil, &l)
}

// AddMCPServer configures an MCP server.
func (c *Client) AddMCPServer(ctx context.Context, in wire.MCPServerInput) (wire.MCPServer, error) {
	var m wire.MCPServer
	return m, c.call(ctx, http.MethodPost, "/api/v1/mcp-servers", in, &m)
}

// CheckMCPServer starts an MCP server as a task would and lists its tools.
func (c *Client) CheckMCPServer(ctx context.Context, id string) (wire.MCPServerCheck, error) {
	var r wire.MCPServerCheck
	return r, c.call(ctx, http.MethodPost, "/api/v1/mcp-servers/"+esc(id)+"/check", nil, &r)
}

// EditMCPServer changes an MCP server (by ID or name): the fields given.
func (c *Client) EditMCPServer(ctx context.Context, id string, p wire.MCPServerPatch) (wire.MCPServer, error) {
	var m wire.MCPServer
	return m, c.call(ctx, http.MethodPatch, "/api/v1/mcp-servers/"+esc(id), p, &m)
}

// SetMCPServerEnabled turns an MCP server (by ID or name) on or off for new
// tasks.
func (c *Client) SetMCPServerEnabled(ctx context.Context, id string, on bool) (wire.MCPServer, error) {
	var m wire.MCPServer
	return m, c.call(ctx, http.MethodPatch, "/api/v1/mcp-servers/"+esc(id), map[string]bool{"enabled": on}, &m)
}

// RemoveMCPServer removes an MCP server (by ID or name) and its secrets.
func (c *Client) RemoveMCPServer(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/mcp-servers/"+esc(id), nil, nil)
}

// Webhooks lists the webhooks (their addresses redacted, never their
// secrets).
func (c *Client) Webhooks(ctx context.Context) ([]wire.Webhook, error) {
	var l wire.WebhookList
	return l.Webhooks, c.call(ctx, http.MethodGet, "/api/v1/webhooks", nil, &l)
}

// AddWebhook adds a webhook.
func (c *Client) AddWebhook(ctx context.Context, in wire.WebhookInput) (wire.Webhook, error) {
	var w wire.Webhook
	return w, c.call(ctx, http.MethodPost, "/api/v1/webhooks", in, &w)
}

// TestWebhook sends a webhook (by ID or name) a test notice.
func (c *Client) TestWebhook(ctx context.Context, id string) (wire.WebhookTest, error) {
	var r wire.WebhookTest
	return r, c.call(ctx, http.MethodPost, "/api/v1/webhooks/"+esc(id)+"/test", nil, &r)
}

// SetWebhookEnabled turns a webhook (by ID or name) on or off.
func (c *Client) SetWebhookEnabled(ctx context.Context, id string, on bool) (wire.Webhook, error) {
	var w wire.Webhook
	return w, c.call(ctx, http.MethodPatch, "/api/v1/webhooks/"+esc(id), map[string]bool{"enabled": on}, &w)
}

// RemoveWebhook removes a webhook (by ID or name) and its secret.
func (c *Client) RemoveWebhook(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/webhooks/"+esc(id), nil, nil)
}

// Skills lists the skill library.
func (c *Client) Skills(ctx context.Context) (wire.SkillList, error) {
	var l wire.SkillList
	return l, c.call(ctx, http.MethodGet, "/api/v1/skills", nil, &l)
}

// Skill is one skill of the library, with its instructions.
func (c *Client) Skill(ctx context.Context, name string) (wire.Skill, error) {
	var out wire.Skill
	return out, c.call(ctx, http.MethodGet, "/api/v1/skills/"+esc(name), nil, &out)
}

// SetSkillEnabled turns a skill on or off (off: the agent is not told of it).
func (c *Client) SetSkillEnabled(ctx context.Context, name string, on bool) (wire.Skill, error) {
	var out wire.Skill
	return out, c.call(ctx, http.MethodPatch, "/api/v1/skills/"+esc(name), map[string]bool{"isEnabled": on}, &out)
}

// SaveSkill adds a skill to the library.
func (c *Client) SaveSkill(ctx context.Context, s wire.Skill) (wire.Skill, error) {
	var out wire.Skill
	return out, c.call(ctx, http.MethodPost, "/api/v1/skills", s, &out)
}

// ImportSkills imports a skill folder or a git repository's skills.
func (c *Client) ImportSkills(ctx context.Context, in wire.SkillImport) (wire.SkillList, error) {
	var l wire.SkillList
	return l, c.call(ctx, http.MethodPost, "/api/v1/skills/import", in, &l)
}

// RemoveSkill removes a skill from the library.
func (c *Client) RemoveSkill(ctx context.Context, name string) error {
	return c.call(ctx, http.MethodDelete, "/api/v1/skills/"+esc(name), nil, nil)
}

// SkillDraft drafts a skill from a finished task.
func (c *Client) SkillDraft(ctx context.Context, taskID string) (wire.Skill, error) {
	var s wire.Skill
	return s, c.call(ctx, http.MethodGet, "/api/v1/tasks/"+esc(taskID)+"/skill-draft", nil, &s)
}
