package wire

import "time"

// AuthCheck answers GET /auth/check: whether the request's credentials
// are good, and which they were ("bearer" or "cookie"; none over the unix
// socket, which needs none).
type AuthCheck struct {
	Authenticated bool   `json:"authenticated"`
	Method        string `json:"method,omitempty"`
}

// PairingRequest answers POST /auth/pair/request: the device's secret id
// (to poll with) and the code it shows, valid ExpiresIn seconds.
type PairingRequest struct {
	PairingID string `json:"pairingId"`
	Code      string `json:"code"`
	ExpiresIn int    `json:"expiresIn"`
	// ExpiresAt (extension) is when the code expires.
	ExpiresAt time.Time `json:"expiresAt"`
}

// PairingStatus answers GET /auth/pair/status: pending, approved,
// rejected (the user denied it) or expired; DeviceName once approved.
type PairingStatus struct {
	Status     string `json:"status"`
	DeviceName string `json:"deviceName,omitempty"`
}

// Pairing (extension) is a device waiting for the user's answer, as the
// desktop shows it: never its secret id.
type Pairing struct {
	Code       string `json:"code"`
	DeviceName string `json:"deviceName"`
	UserAgent  string `json:"userAgent"`
	// Address is the network address the device asked from; only it
	// receives the session, which is bound to it.
	Address   string    `json:"address"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// PairingList answers GET /auth/pairings.
type PairingList struct {
	Pairings []Pairing `json:"pairings"`
}

// Device is a paired device in GET /auth/devices. ID, Name, DeviceType
// (desktop, mobile or tablet), Browser, OS, AuthorizedAt and LastSeenAt
// are Swift's; the rest are ours.
type Device struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	DeviceType   string    `json:"deviceType"`
	Browser      string    `json:"browser"`
	OS           string    `json:"os"`
	AuthorizedAt time.Time `json:"authorizedAt"`
	LastSeenAt   time.Time `json:"lastSeenAt"`
	UserAgent    string    `json:"userAgent"`
	ExpiresAt    time.Time `json:"expiresAt"`
	// Address is the network address the device was paired from: its
	// session is accepted from there only.
	Address string `json:"address"`
	// Current marks the device the request came from.
	Current bool `json:"current,omitempty"`
}

// DeviceList answers GET /auth/devices.
type DeviceList struct {
	Devices []Device `json:"devices"`
}

// Logout answers POST /auth/logout.
type Logout struct {
	Status string `json:"status"`
}

// LoginLink is the answer of POST /auth/login-link: a one-time link that
// opens the web UI with a session.
type LoginLink struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
}
