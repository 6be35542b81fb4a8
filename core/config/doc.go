// Package config resolves where Hivecrew keeps its data and defines the user's
// settings: their defaults, their validation and how a partial update applies.
// The store persists settings; this package owns their meaning.
package config
