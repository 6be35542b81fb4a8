package wire

import (
	"time"
)

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
