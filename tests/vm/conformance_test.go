package vm

import (
	"testing"

	"github.com/hivecrew/hivecrew/core/vm"
	"github.com/hivecrew/hivecrew/core/vm/vmtest"
)

func TestSandboxConformance(t *testing.T) {
	data := t.TempDir()
	vmtest.Run(t, vmtest.Harness{Backend: newBackend(t, data), Template: vm.Template{ID: "host", Kind: vm.KindHost}, Dir: data})
}
