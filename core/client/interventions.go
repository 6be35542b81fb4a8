package client

import (
	"context"
	"net/http"

	"github.com/hivecrew/hivecrew/core/wire"
)

// Question returns the pending question, or nil.
func (c *Client) Question(ctx context.Context, id string) (*wire.Question, error) {
	return optional[wire.Question](ctx, c, "/api/v1/tasks/"+esc(id)+"/question")
}

// Answer answers a question.
func (c *Client) Answer(ctx context.Context, id, questionID, answer string) error {
	return c.call(ctx, http.MethodPost, "/api/v1/tasks/"+esc(id)+"/question/answer", wire.Answer{QuestionID: questionID, Answer: answer}, nil)
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
