package wire

// SkillList is the answer of GET /skills. Problems (extension) are the
// folders of the library that are not skills, each with why.
type SkillList struct {
	Skills   []Skill  `json:"skills"`
	Problems []string `json:"problems,omitempty"`
}

// Skill is a named instruction set an agent can be told to use.
// Instructions are sent by GET /skills/:name and the draft of a finished
// task (extension), and taken by POST and PUT.
type Skill struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	IsEnabled    bool   `json:"isEnabled"`
	Instructions string `json:"instructions,omitempty"`
}

// SkillImport is the body of POST /skills/import: a folder on this
// computer, or a git URL (extension).
type SkillImport struct {
	Path    string `json:"path,omitempty"`
	GitURL  string `json:"gitUrl,omitempty"`
	Replace bool   `json:"replace,omitempty"`
}

// WebSearch is the answer of GET /web-search: the backend from Settings,
// and whether the search API key is stored (extension). PUT takes APIKey.
type WebSearch struct {
	Backend   string `json:"backend"`
	URL       string `json:"url,omitempty"`
	HasAPIKey bool   `json:"hasApiKey"`
	APIKey    string `json:"apiKey,omitempty"`
}
