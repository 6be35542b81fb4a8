package responsestest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"
)

// reply is an answer of the server as a client reads it.
type reply struct {
	status int
	header http.Header
	body   []byte
	err    error // reading the body
}

// post sends body (marshalled, or a string as it is) to POST /v1/responses.
func post(t *testing.T, s *Server, body any) reply {
	t.Helper()
	b, ok := body.(string)
	if !ok {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		b = string(raw)
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/responses", strings.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if s.Key != "" {
		req.Header.Set("Authorization", "Bearer "+s.Key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: got, err: err}
}

// ok is a 200 JSON answer's response object.
func (r reply) ok(t *testing.T) map[string]any {
	t.Helper()
	if r.status != http.StatusOK || r.err != nil {
		t.Fatalf("got %d (%v): %s", r.status, r.err, r.body)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("not JSON: %v: %s", err, r.body)
	}
	return m
}

// refused checks an error answer: its status, OpenAI's error shape, its
// code and words from its message.
func (r reply) refused(t *testing.T, status int, code, words string) {
	t.Helper()
	var e struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error == nil {
		t.Fatalf("got %d, not an error body: %s", r.status, r.body)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := e.Error[k]; !ok {
			t.Errorf("the error has no %q: %s", k, r.body)
		}
	}
	gotCode, _ := e.Error["code"].(string)
	msg, _ := e.Error["message"].(string)
	if r.status != status || gotCode != code || !strings.Contains(msg, words) {
		t.Fatalf("got %d %q %q, want %d %q with %q", r.status, gotCode, msg, status, code, words)
	}
}

// output is a response's output items.
func output(resp map[string]any) []map[string]any {
	var out []map[string]any
	for _, it := range resp["output"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

func pngURL(t testing.TB, w, h int) string {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}

func user(text string) map[string]any { return map[string]any{"role": "user", "content": text} }

func computerTool() map[string]any {
	return map[string]any{"type": "computer_use_preview", "display_width": 1280, "display_height": 800, "environment": "linux"}
}

func functionTool(name string) map[string]any {
	return map[string]any{"type": "function", "name": name, "strict": true, "parameters": map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"path"},
		"properties": map[string]any{"path": map[string]any{"type": "string"}}}}
}

// cua is a stateless computer-use-preview request.
func cua(input ...any) map[string]any {
	return map[string]any{"model": "computer-use-preview", "truncation": "auto", "store": false,
		"include": []string{"reasoning.encrypted_content"}, "tools": []any{computerTool()}, "input": input}
}

// gpt5 is a stateless gpt-5 request with one function tool.
func gpt5(input ...any) map[string]any {
	return map[string]any{"model": "gpt-5", "store": false, "include": []string{"reasoning.encrypted_content"},
		"tools": []any{functionTool("read_file")}, "input": input}
}

func screenshot(t testing.TB, callID string, acks ...SafetyCheck) map[string]any {
	it := map[string]any{"type": "computer_call_output", "call_id": callID,
		"output": map[string]any{"type": "computer_screenshot", "image_url": pngURL(t, 1280, 800)}}
	if len(acks) > 0 {
		it["acknowledged_safety_checks"] = acks
	}
	return it
}

func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func TestAuthModelsAndURLs(t *testing.T) {
	s := New(t)
	s.Key = "sk-test-0123456789"
	send := func(key string) int {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/responses", strings.NewReader(`{"model":"gpt-5","input":"hi"}`))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if key == "wrong-key-123456" && !strings.Contains(string(b), `"code":"invalid_api_key"`) {
			t.Errorf("a wrong key: %s", b)
		}
		return resp.StatusCode
	}
	if send("") != 401 || send("wrong-key-123456") != 401 || send(s.Key) != 200 {
		t.Fatal("want 401 without the key or with another, 200 with it")
	}
	if s.Refusals() != 2 || s.Count() != 1 {
		t.Errorf("refusals %d, count %d; want 2 and 1", s.Refusals(), s.Count())
	}

	get := func(path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+s.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/models"); code != 200 || !strings.Contains(body, `"id":"computer-use-preview"`) || !strings.Contains(body, `"id":"gpt-5"`) {
		t.Errorf("GET /models: %d %s", code, body)
	}
	if code, _ := get("/models/gpt-5"); code != 200 {
		t.Errorf("GET /models/gpt-5: %d", code)
	}
	if code, body := get("/models/gpt-4o"); code != 404 || !strings.Contains(body, "model_not_found") {
		t.Errorf("GET /models/gpt-4o: %d %s", code, body)
	}
	if code, _ := get("/chat/completions"); code != 404 {
		t.Errorf("an unserved URL: %d", code)
	}
	post(t, s, map[string]any{"model": "gpt-4o", "input": "hi"}).refused(t, 404, "model_not_found", "The model `gpt-4o` does not exist")
	s.Models = []string{"gpt-4o"}
	post(t, s, map[string]any{"model": "gpt-4o", "input": "hi"}).ok(t)
}

// TestRefusesWhatOpenAIRefuses sends, for each rule, a request that breaks
// it (refused, with OpenAI's status, code and words) and one that keeps it
// (answered).
func TestRefusesWhatOpenAIRefuses(t *testing.T) {
	img := pngURL(t, 64, 48)
	fc := map[string]any{"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": `{"path":"a"}`}
	fco := map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "contents"}
	cc := map[string]any{"type": "computer_call", "id": "cu_1", "call_id": "call_2", "status": "completed",
		"action": map[string]any{"type": "click", "button": "left", "x": 1, "y": 2}, "pending_safety_checks": []any{}}
	imageMsg := func(url string) map[string]any {
		return map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": "look"},
			map[string]any{"type": "input_image", "image_url": url, "detail": "auto"}}}
	}
	loose := functionTool("read_file")
	loose["parameters"] = map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}
	verdict := map[string]any{"format": map[string]any{"type": "json_schema", "name": "completion_check", "strict": true,
		"schema": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"success", "summary"},
			"properties": map[string]any{"success": map[string]any{"type": "boolean"}, "summary": map[string]any{"type": "string"}}}}}
	for _, c := range []struct {
		name        string
		bad, good   any
		status      int
		code, words string
	}{
		{"json", `{"model":`, gpt5(user("hi")), 400, "", "could not parse the JSON body"},
		{"unknown parameter", with(gpt5(user("hi")), "colour", "blue"), gpt5(user("hi")), 400, "unknown_parameter", "Unknown parameter: 'colour'."},
		{"type", with(gpt5(user("hi")), "store", "no"), gpt5(user("hi")), 400, "invalid_type", "Invalid type for 'store': expected a boolean, but got a string instead."},
		{"model missing", with(gpt5(user("hi")), "model", nil), gpt5(user("hi")), 400, "missing_required_parameter", "'model'"},
		{"cua without computer tool", with(cua(user("hi")), "tools", []any{}), cua(user("hi")), 400, "", "exactly one tool of type 'computer_use_preview'"},
		{"cua with two computer tools", with(cua(user("hi")), "tools", []any{computerTool(), computerTool()}), cua(user("hi")), 400, "", "exactly one tool"},
		{"cua without truncation auto", with(cua(user("hi")), "truncation", nil), cua(user("hi")), 400, "", "'truncation' to be 'auto'"},
		{"computer tool on gpt-5", with(gpt5(user("hi")), "tools", []any{computerTool()}), gpt5(user("hi")), 400, "", "not supported with gpt-5"},
		{"environment", with(cua(user("hi")), "tools", []any{with(computerTool(), "environment", "amiga")}), cua(user("hi")), 400, "invalid_value", "Invalid value: 'amiga'"},
		{"display size", with(cua(user("hi")), "tools", []any{with(computerTool(), "display_width", nil)}), cua(user("hi")), 400, "missing_required_parameter", "'tools[0].display_width'"},
		{"function names unique", with(gpt5(user("hi")), "tools", []any{functionTool("read_file"), functionTool("read_file")}), gpt5(user("hi")), 400, "invalid_value", "duplicate function name 'read_file'"},
		{"function name pattern", with(gpt5(user("hi")), "tools", []any{functionTool("read file")}), gpt5(user("hi")), 400, "invalid_value", "does not match pattern"},
		{"strict schema", with(gpt5(user("hi")), "tools", []any{loose}), with(gpt5(user("hi")), "tools", []any{with(loose, "strict", false)}), 400, "invalid_function_parameters", "'additionalProperties' is required to be supplied and to be false"},
		{"format name", with(gpt5(user("hi")), "text", map[string]any{"format": map[string]any{"type": "json_schema", "schema": map[string]any{"type": "object"}}}), with(gpt5(user("hi")), "text", verdict), 400, "missing_required_parameter", "'text.format.name'"},
		{"json_object needs the word", with(gpt5(user("hi")), "text", map[string]any{"format": map[string]any{"type": "json_object"}}), with(gpt5(user("answer in JSON")), "text", map[string]any{"format": map[string]any{"type": "json_object"}}), 400, "", "must contain the word 'json'"},
		{"temperature on gpt-5", with(gpt5(user("hi")), "temperature", 0.2), with(cua(user("hi")), "temperature", 0.2), 400, "unsupported_parameter", "'temperature' is not supported with this model"},
		{"max_output_tokens", with(gpt5(user("hi")), "max_output_tokens", 8), with(gpt5(user("hi")), "max_output_tokens", 16), 400, "integer_below_min_value", "Expected a value >= 16, but got 8"},
		{"include", with(gpt5(user("hi")), "include", []string{"reasoning.everything"}), gpt5(user("hi")), 400, "invalid_value", "Invalid value: 'reasoning.everything'"},
		{"role", gpt5(map[string]any{"role": "tool", "content": "x"}), gpt5(map[string]any{"role": "developer", "content": "x"}), 400, "invalid_value", "Invalid value: 'tool'"},
		{"assistant parts", gpt5(user("hi"), map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "input_text", "text": "x"}}}),
			gpt5(user("hi"), map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "x"}}}), 400, "invalid_value", "Invalid value: 'input_text'"},
		{"unknown item key", gpt5(user("hi"), with(fc, "colour", "red"), fco), gpt5(user("hi"), fc, fco), 400, "unknown_parameter", "'input[1].colour'"},
		{"function call answered", gpt5(user("hi"), fc), gpt5(user("hi"), fc, fco), 400, "", "No tool output found for function call call_1."},
		{"output after its call", gpt5(user("hi"), fco, fc), gpt5(user("hi"), fc, fco), 400, "", "No tool call found for function call output with call_id call_1."},
		{"computer call answered", cua(user("hi"), cc), cua(user("hi"), cc, screenshot(t, "call_2")), 400, "", "No tool output found for computer call call_2."},
		{"computer call needs its id", cua(user("hi"), with(cc, "id", nil), screenshot(t, "call_2")), cua(user("hi"), cc, screenshot(t, "call_2")), 400, "missing_required_parameter", "'input[1].id'"},
		{"computer action", cua(user("hi"), with(cc, "action", map[string]any{"type": "teleport"}), screenshot(t, "call_2")), cua(user("hi"), cc, screenshot(t, "call_2")), 400, "invalid_value", "unknown action type teleport"},
		{"screenshot type", cua(user("hi"), cc, with(screenshot(t, "call_2"), "output", map[string]any{"type": "input_image", "image_url": img})),
			cua(user("hi"), cc, screenshot(t, "call_2")), 400, "invalid_value", "Invalid value: 'input_image'"},
		{"screenshot decodes", cua(user("hi"), cc, with(screenshot(t, "call_2"), "output", map[string]any{"type": "computer_screenshot", "image_url": "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("not a png"))})),
			cua(user("hi"), cc, screenshot(t, "call_2")), 400, "invalid_image_format", "does not represent a valid image"},
		{"base64", gpt5(imageMsg("data:image/png;base64,@@@")), gpt5(imageMsg(img)), 400, "invalid_value", "an invalid base64 encoding"},
		{"image MIME", gpt5(imageMsg(strings.Replace(img, "image/png", "image/bmp", 1))), gpt5(imageMsg(strings.Replace(img, "image/png", "image/jpeg", 1))), 400, "invalid_value", "unsupported MIME type 'image/bmp'"},
		{"store false refers to nothing", gpt5(map[string]any{"type": "item_reference", "id": "msg_1"}), gpt5(user("hi")), 404, "", "Item with id 'msg_1' not found."},
		{"previous response", with(gpt5(user("hi")), "previous_response_id", "resp_nope"), gpt5(user("hi")), 404, "previous_response_not_found", "Previous response with id 'resp_nope' not found."},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New(t)
			post(t, s, c.bad).refused(t, c.status, c.code, c.words)
			if r := s.Received(); r[0].Status != c.status || r[0].Error == "" {
				t.Errorf("the refusal is not recorded: %+v", r[0])
			}
			post(t, s, c.good).ok(t)
			if s.Refusals() != 1 || s.Count() != 1 {
				t.Errorf("refusals %d, accepted %d; want 1 and 1", s.Refusals(), s.Count())
			}
		})
	}
}

func TestImagesAreRecorded(t *testing.T) {
	s := New(t)
	cc := map[string]any{"type": "computer_call", "id": "cu_1", "call_id": "call_2",
		"action": map[string]any{"type": "screenshot"}, "pending_safety_checks": []any{}}
	post(t, s, cua(map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "input_image", "image_url": pngURL(t, 64, 48), "detail": "low"}}}, cc, screenshot(t, "call_2"))).ok(t)
	got := s.Received()[0].Images
	if len(got) != 2 {
		t.Fatalf("images: %+v", got)
	}
	if g := got[0]; g.Source != "input_image" || g.Width != 64 || g.Height != 48 || g.Format != "png" || g.Detail != "low" || g.Path != "input[0].content[0]" {
		t.Errorf("the input image: %+v", g)
	}
	if g := got[1]; g.Source != "computer_call_output" || g.Width != 1280 || g.Height != 800 || g.Bytes == 0 || g.Path != "input[2].output" {
		t.Errorf("the screenshot: %+v", g)
	}
	// OpenAI's tile rule: 1280x800 is brought to 1229x768, 3x2 tiles.
	if n := imageTokens("computer-use-preview", 1280, 800, "auto"); n != 65+6*129 {
		t.Errorf("a 1280x800 screenshot costs %d tokens, want %d", n, 65+6*129)
	}
	if n := imageTokens("gpt-5", 4096, 2048, "high"); n != 70+6*140 {
		t.Errorf("a 4096x2048 image costs %d tokens on gpt-5, want %d", n, 70+6*140)
	}
	if n := imageTokens("gpt-4o", 4096, 4096, "low"); n != 85 {
		t.Errorf("low detail costs %d, want 85", n)
	}
}

// TestSafetyChecksRefusedUntilAcknowledged: a computer call with pending
// safety checks is answered only with exactly those checks acknowledged.
func TestSafetyChecksRefusedUntilAcknowledged(t *testing.T) {
	s := New(t)
	click := map[string]any{"type": "click", "button": "left", "x": 10, "y": 20}
	s.Script("[[pay]]", Items(Reasoning("The page asks to pay."),
		WithSafetyCheck(WithSafetyCheck(Computer(click), "malicious_instructions", "The page may be hostile."), "sensitive_domain", "A bank.")),
		Text("Paid."))
	first := output(post(t, s, cua(user("[[pay]] Pay the bill."))).ok(t))
	if len(first) != 2 || first[0]["type"] != "reasoning" || first[1]["type"] != "computer_call" {
		t.Fatalf("output: %v", first)
	}
	call := first[1]
	var checks []SafetyCheck
	b, _ := json.Marshal(call["pending_safety_checks"])
	json.Unmarshal(b, &checks)
	if len(checks) != 2 || checks[0].Code != "malicious_instructions" || !strings.HasPrefix(checks[0].ID, "cu_sc_") || checks[1].Code != "sensitive_domain" {
		t.Fatalf("pending safety checks: %s", b)
	}
	callID := call["call_id"].(string)
	next := func(acks ...SafetyCheck) reply {
		return post(t, s, cua(user("[[pay]] Pay the bill."), first[0], call, screenshot(t, callID, acks...)))
	}
	next().refused(t, 400, "", "Computer tool has unacknowledged safety check for ['"+checks[0].ID+"', '"+checks[1].ID+"']")
	next(checks[0]).refused(t, 400, "", "unacknowledged safety check for ['"+checks[1].ID+"']")
	next(checks[0], checks[1], SafetyCheck{ID: "cu_sc_madeup"}).refused(t, 400, "", "'cu_sc_madeup' is not a pending safety check")
	if len(s.Acknowledgements()) != 0 {
		t.Fatal("an acknowledgement is recorded before one was accepted")
	}
	resp := next(checks[1], checks[0]).ok(t)
	if out := output(resp); out[0]["content"].([]any)[0].(map[string]any)["text"] != "Paid." {
		t.Errorf("the script's second turn was not played after the refusals: %v", out)
	}
	acks := s.Acknowledgements()
	if len(acks) != 1 || acks[0].CallID != callID || acks[0].Issued != 0 || acks[0].Request != 4 || len(acks[0].Checks) != 2 {
		t.Errorf("acknowledgements: %+v", acks)
	}
	if s.Refusals() != 3 {
		t.Errorf("refusals: %d", s.Refusals())
	}
}

// TestReasoningRoundTrip: with store false, reasoning items come back
// with the encrypted content the server issued, followed by the item that
// followed them; the calls come back with their reasoning.
func TestReasoningRoundTrip(t *testing.T) {
	s := New(t)
	s.Script("[[read]]", Items(Reasoning("I should read the file.", "Then answer."), Call("read_file", map[string]any{"path": "a.txt"})), Text("It says hello."))
	out := output(post(t, s, gpt5(user("[[read]]"))).ok(t))
	rs, fc := out[0], out[1]
	enc, _ := rs["encrypted_content"].(string)
	if rs["type"] != "reasoning" || enc == "" || fc["type"] != "function_call" || len(rs["summary"].([]any)) != 2 {
		t.Fatalf("output: %v", out)
	}
	fco := map[string]any{"type": "function_call_output", "call_id": fc["call_id"], "output": "hello"}
	bare := with(rs, "encrypted_content", nil)
	other := with(rs, "encrypted_content", enc[:len(enc)-2]+"xx")
	noID := with(fc, "id", nil)
	send := func(items ...any) reply { return post(t, s, gpt5(append([]any{user("[[read]]")}, items...)...)) }

	send(bare, fc, fco).refused(t, 404, "", "Items are not persisted when `store` is set to false.")
	send(other, fc, fco).refused(t, 400, "invalid_encrypted_content", "could not be verified")
	send(rs, fco).refused(t, 400, "", "Item '"+rs["id"].(string)+"' of type 'reasoning' was provided without its required following item.")
	send(fc, fco).refused(t, 400, "", "Item '"+fc["id"].(string)+"' of type 'function_call' was provided without its required 'reasoning' item: '"+rs["id"].(string)+"'.")

	// The content of another reasoning item does not open for this one.
	s.Script("[[two]]", Items(Reasoning("Two."), Text("Done.")))
	two := output(post(t, s, gpt5(user("[[two]]"))).ok(t))
	swapped := with(rs, "encrypted_content", two[0]["encrypted_content"])
	send(swapped, fc, fco).refused(t, 400, "invalid_encrypted_content", "The encrypted content for item "+rs["id"].(string)+" could not be verified.")

	// A client may drop both the reasoning and the call's id.
	send(noID, fco).ok(t)
	// Or send them back as issued.
	answer := output(send(rs, fc, fco).ok(t))
	if answer[0]["content"].([]any)[0].(map[string]any)["text"] == "" {
		t.Errorf("answer: %v", answer)
	}
	// Without the include, no encrypted content is issued.
	s.Script("[[plain]]", Items(Reasoning("Plain."), Text("Done.")))
	plain := output(post(t, s, with(gpt5(user("[[plain]]")), "include", nil)).ok(t))
	if _, ok := plain[0]["encrypted_content"]; ok {
		t.Errorf("encrypted content without the include: %v", plain[0])
	}
}

// TestStoredConversation: with store true (the default) the server keeps
// its responses, so previous_response_id, item references and reasoning
// items by id work; a response made with store false is not kept.
func TestStoredConversation(t *testing.T) {
	s := New(t)
	s.Script("[[stored]]", Items(Reasoning("Read it."), Call("read_file", map[string]any{"path": "a"})), Text("Read."), Text("Again."))
	first := post(t, s, with(gpt5(user("[[stored]]")), "store", nil, "include", nil)).ok(t)
	out := output(first)
	fco := map[string]any{"type": "function_call_output", "call_id": out[1]["call_id"], "output": "hello"}
	prev := with(gpt5(fco), "store", nil, "previous_response_id", first["id"])

	post(t, s, with(prev, "input", []any{user("[[stored]] no output")})).refused(t, 400, "", "No tool output found for function call "+out[1]["call_id"].(string))
	second := post(t, s, prev).ok(t)
	if second["previous_response_id"] != first["id"] {
		t.Errorf("previous_response_id: %v", second["previous_response_id"])
	}
	// Items of a stored response by reference, reasoning by its id alone.
	refs := with(gpt5(user("[[stored]]"), map[string]any{"type": "reasoning", "id": out[0]["id"], "summary": []any{}},
		map[string]any{"type": "item_reference", "id": out[1]["id"]}, fco), "store", nil)
	post(t, s, refs).ok(t)

	// A response made with store false cannot be continued.
	unstored := post(t, s, gpt5(user("[[unstored]]"))).ok(t)
	post(t, s, with(gpt5(user("go on")), "previous_response_id", unstored["id"])).refused(t, 404, "previous_response_not_found", "not found")
}

func TestContextWindow(t *testing.T) {
	s := New(t)
	s.ContextTokens = 2000
	long := strings.Repeat("word ", 2000) // 10000 bytes, 2500 tokens
	post(t, s, gpt5(user(long))).refused(t, 400, "context_length_exceeded", "Your input exceeds the context window of this model.")
	post(t, s, gpt5(user(long[:4000]))).ok(t)

	// truncation "auto" drops items from the middle instead.
	r := post(t, s, cua(user("first"), user(long[:4000]), user(long[:4000]), user("last")))
	r.ok(t)
	got := s.Received()[2]
	if got.Truncated != 1 || got.Usage.InputTokens > 2000 {
		t.Errorf("truncated %d items to %d tokens; want one item dropped, at most 2000 tokens", got.Truncated, got.Usage.InputTokens)
	}
	// Even then, what cannot fit is refused.
	post(t, s, cua(user(long))).refused(t, 400, "context_length_exceeded", "context window")
}
