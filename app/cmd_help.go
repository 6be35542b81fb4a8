package main

// cmdHelp: hivecrew help [COMMAND [SUBCOMMAND]]
func cmdHelp(e *env, args []string) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		return helpRequest{usage()}
	}
	return runTable(e, "", commands(), append(append([]string(nil), args...), "-h"))
}
