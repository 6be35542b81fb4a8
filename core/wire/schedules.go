package wire

import (
	"time"
)

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
