// Package faults holds Hivecrew's fault-injection end-to-end tests: a real
// helper (the hivecrew-helper process, or core/daemon in-process where a
// test needs a knob the command line does not offer) with real sandbox
// guests and a scripted provider, under a fault: the guest agent or the
// whole sandbox SIGKILLed mid-step, the helper SIGKILLed mid-task and
// restarted, the provider answering 429/500 storms, hanging or closing
// mid-answer, the trace folder on a full filesystem, the store locked by
// another process. Each test checks what a user would: a clear error on
// the task, no task lost, no sandbox left running, a database that passes
// its integrity check and traces that read back.
//
// The hostile-guest tests (impostor_test.go) take the guest to be an
// attacker: a prompt-injected agent runs shell commands in its VM. Threats
// and the tests that answer them:
//
//   - Guest code stops the real guest agent, replaces its socket and serves
//     an impostor that answers hello like the agent: the host must refuse
//     it (it cannot prove the per-boot key), fail that task with a clear
//     reason, stay up, and let a task on another VM finish
//     (TestReplacedAgentIsRefused).
//   - The impostor answers with data built to crash or wedge the helper: a
//     line of 10 million '[' (which overflowed the stack of the host's
//     recursive JSON scanner), JSON nested 100,000 deep, a line over the
//     64 MiB cap, a line without end, an answer to a call never made: the
//     helper stays up and each task fails within a bounded time with a
//     clear reason (TestHostileEndpointCannotCrashTheHelper).
//
// Hostile-guest threats answered here (issues 15, 24), each by a real
// attacker's move in a real sandbox:
//   - egress_test.go: an internet-mode guest reaching host services bound
//     to 0.0.0.0 through the host's own addresses, the cloud metadata
//     address, or machines on private networks next to the host;
//     and slirp4netns, which parses the guest's packets, running jailed
//     (no capabilities, no host data in its root, its own namespaces);
//   - hosttemplate_test.go: a guest of the default host template reading
//     host data (/work source trees, /srv, /opt, /var, /etc secrets, the
//     host's machine id).
package faults
