package wire

import (
	"time"
)

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
