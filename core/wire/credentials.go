package wire

import (
	"time"
)

// Credential is a stored login (extension): its secrets are never sent.
type Credential struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Username    string    `json:"username,omitempty"`
	HasPassword bool      `json:"hasPassword"`
	HasTOTP     bool      `json:"hasTOTP"`
	AllowedApps []string  `json:"allowedApps"`
	CreatedAt   time.Time `json:"createdAt"`
}

// CredentialList is the answer of GET /credentials.
type CredentialList struct {
	Credentials []Credential `json:"credentials"`
}

// CredentialInput is the body of POST /credentials. Password and TOTPSeed
// are write-only.
type CredentialInput struct {
	Name        string   `json:"name"`
	Username    string   `json:"username,omitempty"`
	Password    string   `json:"password,omitempty"`
	TOTPSeed    string   `json:"totpSeed,omitempty"`
	AllowedApps []string `json:"allowedApps,omitempty"`
}

// CredentialPatch is the body of PATCH /credentials/:id: each field given
// replaces the stored one. Password and TOTPSeed are write-only; "" removes
// one of them.
type CredentialPatch struct {
	Name        *string   `json:"name,omitempty"`
	Username    *string   `json:"username,omitempty"`
	Password    *string   `json:"password,omitempty"`
	TOTPSeed    *string   `json:"totpSeed,omitempty"`
	AllowedApps *[]string `json:"allowedApps,omitempty"`
}
