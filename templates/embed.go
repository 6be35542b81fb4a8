// Package templates holds the template manifests shipped with Hivecrew:
// one folder per template with its template.yaml, README.md and the
// provisioning scripts it names. The helper embeds them, so building a
// template needs no checkout; core/template loads and checks them.
package templates

import "embed"

// FS holds every template folder.
//
//go:embed */template.yaml */README.md */*.sh
var FS embed.FS
