package client

import (
	"context"
	"net/http"
	"strings"

	"github.com/hivecrew/hivecrew/core/wire"
)

// CreateSchedule adds a schedule, with input files as multipart.
func (c *Client) CreateSchedule(ctx context.Context, in wire.CreateSchedule, files ...string) (wire.Schedule, error) {
	var s wire.Schedule
	if strings.TrimSpace(in.Title) == "" {
		in.Title = wire.TitleFrom(in.Description) // the API needs one
	}
	return s, c.postWithFiles(ctx, "/api/v1/schedules", "schedule", in, files, &s)
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
