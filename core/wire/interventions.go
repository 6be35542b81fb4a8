package wire

// Answer is the body of POST /tasks/:id/question/answer.
type Answer struct {
	QuestionID string `json:"questionId"`
	Answer     string `json:"answer"`
}

// PermissionResponse is the body of POST /tasks/:id/permission/respond.
type PermissionResponse struct {
	PermissionID string `json:"permissionId"`
	Approved     *bool  `json:"approved"`
}

// Instructions is the body of POST /tasks/:id/instructions.
type Instructions struct {
	Text string `json:"text"`
}

// Takeover is the body of POST /tasks/:id/takeover.
type Takeover struct {
	Action       string `json:"action"` // start, end
	Instructions string `json:"instructions,omitempty"`
	// Native asks the helper to show the VM's own window (macOS guests):
	// closing it hands the VM back (extension).
	Native bool `json:"native,omitempty"`
}

// Input is one pointer or keyboard event of the web takeover view, in the
// guest's logical screen points (POST /tasks/:id/input).
type Input struct {
	Type      string   `json:"type"` // click, move, drag, scroll, type, key
	X         float64  `json:"x,omitempty"`
	Y         float64  `json:"y,omitempty"`
	ToX       float64  `json:"toX,omitempty"`
	ToY       float64  `json:"toY,omitempty"`
	Button    string   `json:"button,omitempty"`
	ClickType string   `json:"clickType,omitempty"`
	DeltaX    float64  `json:"deltaX,omitempty"`
	DeltaY    float64  `json:"deltaY,omitempty"`
	Text      string   `json:"text,omitempty"`
	Key       string   `json:"key,omitempty"`
	Modifiers []string `json:"modifiers,omitempty"`
}
