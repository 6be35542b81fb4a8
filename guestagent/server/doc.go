// Package server is the guest agent's JSON-RPC server: the method set of
// guestagent/protocol/PROTOCOL.md over jrpc2, concurrent requests, $/cancelRequest,
// $/heartbeat every 2 s, the file tools scoped to the shared folder and
// run_shell. What depends on the guest OS (screen, input, accessibility, apps,
// clipboard) comes from a Driver.
package server
