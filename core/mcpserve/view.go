package mcpserve

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hivecrew/hivecrew/core/files"
	"github.com/hivecrew/hivecrew/core/wire"
)

// Bounds of what the tools return, in bytes of text.
const (
	maxResult     = 8 << 10 // a task's result, in get_task and run_task
	maxListResult = 400     // a task's result in list_tasks
	maxTitle      = 300
	maxQuestion   = 4 << 10
	maxDetails    = 4 << 10 // a permission request's details
	maxSuggested  = 10      // suggested answers shown
	maxError      = 2 << 10 // an error's message
)

// Task is a task as the tools show it.
type Task struct {
	ID           string `json:"id"`
	Title        string `json:"title"`
	Status       string `json:"status" jsonschema:"queued, planning, planReview, waitingForVM, running, paused, completed, failed, cancelled, timedOut, maxIterations, planFailed or writebackReview"`
	StatusReason string `json:"statusReason,omitempty"`
	// Ended says the agent is done for good.
	Ended      bool  `json:"ended" jsonschema:"the agent is done: nothing more will happen but a review of its changes to host folders"`
	Successful *bool `json:"successful,omitempty" jsonschema:"whether the task did what was asked (once ended)"`
	// Result is the agent's summary, or why the task ended.
	Result     string      `json:"result,omitempty" jsonschema:"the agent's summary of what it did, or why the task ended"`
	Question   *Question   `json:"question,omitempty" jsonschema:"the agent's question, waiting for answer_question"`
	Permission *Permission `json:"permission,omitempty" jsonschema:"a tool call waiting for approve_tool"`
	Steps      int         `json:"steps,omitempty"`
	CostUSD    float64     `json:"costUSD,omitempty"`
	// OutputFiles counts the files the task made (get_task_outputs).
	OutputFiles int        `json:"outputFiles" jsonschema:"how many files the task made: get_task_outputs lists them"`
	CreatedAt   time.Time  `json:"createdAt"`
	CompletedAt *time.Time `json:"completedAt,omitempty"`
	// Next says what the caller may do now, in words.
	Next string `json:"next,omitempty" jsonschema:"what you can do now"`
}

// Question is an agent's question to the user.
type Question struct {
	ID               string   `json:"id"`
	Text             string   `json:"text"`
	SuggestedAnswers []string `json:"suggestedAnswers,omitempty"`
}

// Permission is a tool call waiting for the user's approval.
type Permission struct {
	ID      string `json:"id"`
	Tool    string `json:"tool"`
	Details string `json:"details,omitempty"`
}

// taskView is t as the tools show it, its result clipped to resultMax.
func taskView(t wire.Task, resultMax int) Task {
	v := Task{
		ID: t.ID, Title: line(t.Title, maxTitle), Status: t.Status, StatusReason: text(t.StatusReason, maxError),
		Ended: ended(t.Status), CreatedAt: t.CreatedAt, CompletedAt: t.CompletedAt,
	}
	if v.Ended {
		v.Successful = t.WasSuccessful
	}
	switch {
	case t.ResultSummary != nil && *t.ResultSummary != "":
		v.Result = text(*t.ResultSummary, resultMax)
	case t.ErrorMessage != nil:
		v.Result = text(*t.ErrorMessage, resultMax)
	}
	if t.StepCount != nil {
		v.Steps = *t.StepCount
	}
	if t.CostUSD != nil {
		v.CostUSD = *t.CostUSD
	}
	switch {
	case t.OutputFileCount != nil:
		v.OutputFiles = *t.OutputFileCount
	default:
		v.OutputFiles = len(t.OutputFiles)
	}
	if q := t.PendingQuestion; q != nil {
		v.Question = &Question{ID: q.ID, Text: text(q.Question, maxQuestion)}
		for i, a := range q.SuggestedAnswers {
			if i == maxSuggested {
				break
			}
			v.Question.SuggestedAnswers = append(v.Question.SuggestedAnswers, line(a, maxTitle))
		}
	}
	if p := t.PendingPermission; p != nil {
		v.Permission = &Permission{ID: p.ID, Tool: line(p.ToolName, maxTitle), Details: text(p.Details, maxDetails)}
	}
	v.Next = next(v)
	return v
}

// next says what the caller may do with a task in the state v shows.
func next(v Task) string {
	switch {
	case v.Question != nil:
		return fmt.Sprintf("The agent asks a question: answer it with answer_question (taskId %s, questionId %s), then get_task with waitSeconds to follow the task.", v.ID, v.Question.ID)
	case v.Permission != nil:
		return fmt.Sprintf("The agent waits for approval of %s: approve_tool (taskId %s, permissionId %s, approved true or false), then get_task with waitSeconds.", v.Permission.Tool, v.ID, v.Permission.ID)
	case v.Status == "writebackReview":
		return "The agent ended; its changes to the host folders wait for the user's review in Hivecrew (hivecrew review " + v.ID + ")."
	case v.Status == "planReview":
		return "The task's plan waits for the user's review in Hivecrew (hivecrew plan show " + v.ID + ")."
	case v.Status == "paused":
		return "The task is paused (" + or(v.StatusReason, "by the user") + "): the user resumes it in Hivecrew (hivecrew resume " + v.ID + "); get_task with waitSeconds follows it."
	case v.Ended && v.OutputFiles > 0:
		return "The task has ended: get_task_outputs lists its files."
	case v.Ended:
		return ""
	}
	return "The task is still going: get_task with waitSeconds waits for it, cancel_task stops it."
}

// ended says whether a task in status s is over for good (its agent
// stopped; a review of its host-folder changes may still wait).
func ended(s string) bool {
	switch s {
	case "completed", "failed", "cancelled", "timedOut", "maxIterations", "planFailed", "writebackReview":
		return true
	}
	return false
}

// settled says whether a wait that began with the task in status from
// is over at t: the task ended, or it waits for the user (a question, a
// permission, or newly a plan to review or a pause: a task that was
// paused when the wait began is waited for until it goes on and ends).
func settled(t wire.Task, from string) bool {
	return ended(t.Status) || t.PendingQuestion != nil || t.PendingPermission != nil ||
		(t.Status == "planReview" || t.Status == "paused") && t.Status != from
}

// text is s (several lines) made printable and clipped to max bytes.
func text(s string, max int) string { return clip(files.PrintableText(strings.TrimSpace(s)), max) }

// line is s on one line, made printable and clipped to max bytes.
func line(s string, max int) string {
	return clip(files.Printable(strings.Join(strings.Fields(s), " ")), max)
}

// clip cuts s to at most n bytes at a rune boundary, saying it did.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = " … (cut)"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:max(cut, 0)] + mark
}

// callerError is err as the caller is shown it: printable, clipped, and
// without Go's wrapping chain of types.
func callerError(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(text(err.Error(), maxError))
}
