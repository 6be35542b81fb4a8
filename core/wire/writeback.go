package wire

// WritebackReview is the answer of GET /tasks/:id/writeback (Swift's
// shape).
type WritebackReview struct {
	TaskID       string          `json:"taskId"`
	Items        []WritebackItem `json:"items"`
	HasConflicts bool            `json:"hasConflicts"`
}

// WritebackItem is one change to a host folder. Operation is Swift's
// (copy: a new file; replace_file: a changed one) or delete (extension);
// DiffPreview is a unified diff of a text file, StagedPreview the start of
// the agent's version. Folder, Path, Op, State, Refused and the sizes are
// extensions: State is pending, applied, discarded, conflict or refused.
type WritebackItem struct {
	ID                string  `json:"id"`
	Operation         string  `json:"operation"`
	SourceFileName    string  `json:"sourceFileName"`
	DestinationPath   string  `json:"destinationPath"`
	DestinationExists bool    `json:"destinationExists"`
	HasConflict       bool    `json:"hasConflict"`
	ConflictReason    *string `json:"conflictReason,omitempty"`
	DiffPreview       *string `json:"diffPreview,omitempty"`
	StagedPreview     *string `json:"stagedPreview,omitempty"`
	Folder            string  `json:"folder"`
	Path              string  `json:"path"`
	Op                string  `json:"op"`
	State             string  `json:"state"`
	Refused           string  `json:"refused,omitempty"`
	SizeBefore        *int64  `json:"sizeBefore,omitempty"`
	SizeAfter         *int64  `json:"sizeAfter,omitempty"`
	// Kind is text, image or binary (for the review's preview).
	Kind string `json:"kind"`
}
