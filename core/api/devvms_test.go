package api_test

import (
	"bufio"
	"encoding/json"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/hivecrew/hivecrew/core/wire"
)

// TestDeveloperVMRoutes: POST /vms boots a developer VM of a template; it
// is listed as one, streams its screen, takes the user's input without a
// takeover (the fake guest records the click), and DELETE removes it.
func TestDeveloperVMRoutes(t *testing.T) {
	h := startHelper(t, nil)
	h.expect(400, "POST", "/api/v1/vms", map[string]any{})
	h.expect(404, "POST", "/api/v1/vms", map[string]any{"templateId": "nope"})
	var v wire.VM
	json.Unmarshal(h.expect(201, "POST", "/api/v1/vms", map[string]any{"templateId": "host"}), &v)
	if v.ID == "" || !v.Developer || v.TemplateID != "host" || v.State != "busy" {
		t.Fatalf("opened %+v", v)
	}
	var l wire.VMList
	json.Unmarshal(h.expect(200, "GET", "/api/v1/vms", nil), &l)
	found := false
	for _, o := range l.VMs {
		if o.ID == v.ID {
			found = o.Developer && o.TaskID == ""
		}
	}
	if !found {
		t.Fatalf("not listed as a developer VM: %+v", l)
	}

	req, _ := http.NewRequest("GET", "http://"+h.addr+"/api/v1/vms/"+v.ID+"/stream?fps=1", nil)
	req.Header.Set("Authorization", "Bearer "+h.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	mt, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != 200 || mt != "multipart/x-mixed-replace" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	part, err := multipart.NewReader(bufio.NewReader(resp.Body), params["boundary"]).NextPart()
	if err != nil || part.Header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("first frame: %v %v", err, part.Header)
	}
	resp.Body.Close()

	h.expect(204, "POST", "/api/v1/vms/"+v.ID+"/input", map[string]any{"type": "click", "x": 20, "y": 30})
	acts := h.backend.Machine(v.ID).Driver().Actions()
	if len(acts) == 0 || acts[len(acts)-1].Kind != "click" || acts[len(acts)-1].X != 20 {
		t.Errorf("the guest received %+v", acts)
	}
	h.expect(400, "POST", "/api/v1/vms/"+v.ID+"/input", map[string]any{"type": "explode"})
	h.expect(404, "POST", "/api/v1/vms/vm-nope/input", map[string]any{"type": "click", "x": 1, "y": 1})

	h.expect(204, "DELETE", "/api/v1/vms/"+v.ID, nil)
	json.Unmarshal(h.expect(200, "GET", "/api/v1/vms", nil), &l)
	for _, o := range l.VMs {
		if o.ID == v.ID {
			t.Errorf("%s is still listed: %+v", v.ID, o)
		}
	}
	if out := h.expect(404, "GET", "/api/v1/vms/"+v.ID+"/stream", nil); !strings.Contains(string(out), "no developer VM") {
		t.Errorf("stream of a removed VM: %s", out)
	}
}
