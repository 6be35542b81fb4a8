package agent

import "testing"

// TestShellTimeoutIsClamped answers issue 34.12 on the host: a run_shell
// call's timeoutSeconds over the guest's limit (1e12, whose nanoseconds
// overflow an int64) is sent as the limit, with a note for the model; one
// within it is left alone. (tests/faults runs it in a real sandbox.)
func TestShellTimeoutIsClamped(t *testing.T) {
	args := map[string]any{"command": "true", "timeoutSeconds": 1e12}
	note := clampTimeout(args)
	if args["timeoutSeconds"] != 3600.0 || note != "Note: timeoutSeconds 1e+12 is over the limit of 3600; the command ran with a limit of 3600 seconds." {
		t.Errorf("1e12: sent %v, note %q", args["timeoutSeconds"], note)
	}
	for _, v := range []any{30.0, 3600.0, "1e12", nil} {
		args := map[string]any{"timeoutSeconds": v}
		if note := clampTimeout(args); note != "" || args["timeoutSeconds"] != v {
			t.Errorf("%v: sent %v, note %q", v, args["timeoutSeconds"], note)
		}
	}
}
