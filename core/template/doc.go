// Package template builds, seals and manages VM templates.
//
// Manifests (template.yaml in a folder of templates/, embedded in the
// helper, or a folder of the user's) say what a template is built from:
// Parse and Validate read them strictly. A Manager owns the templates of
// one helper: it builds a template in the background from a manifest (a
// Debian root filesystem with debootstrap and APT on Linux; a macOS bundle
// from a restore image with VZMacOSInstaller on Apple silicon), reporting
// progress; it seals a VM into a new template (for sandboxes: the VM's
// overlay merged view, with files the VM did not change hard-linked to the
// parent template; for macOS VMs: APFS clones of the disk and auxiliary
// storage); it edits a template's resources, sets the default and deletes
// templates no VM is using. Builds are serialized (they share a download
// cache) and a build cut short by a helper crash is marked failed and
// cleaned up at the next start.
//
// The manifest, progress and version logic is portable and tested
// everywhere; the builders and sealers are per OS (_linux.go, _darwin.go)
// and report errdefs.ErrUnsupported elsewhere.
package template
