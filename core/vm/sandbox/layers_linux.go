package sandbox

import (
	"github.com/hivecrew/hivecrew/core/errdefs"
	"github.com/hivecrew/hivecrew/core/vm"
)

// Layers returns a rootfs machine's copy-on-write layers: the template's
// root filesystem (never written) and the folder the machine's writes land
// in (with overlayfs whiteouts for what it deleted), both with the ids
// as stored (see idmap_linux.go). Sealing a template reads them while the
// machine is stopped.
func (m *Machine) Layers() (lower, upper string, err error) {
	if m.spec.Template.Kind != vm.KindRootFS {
		return "", "", errdefs.Unsupportedf("machine %s runs a %s template: it has no layers of its own", m.spec.ID, m.spec.Template.Kind)
	}
	ov := m.overlay()
	return ov.lower, ov.upper(), nil
}
