package main

// cmdDeny: hivecrew deny ID
func cmdDeny(e *env, args []string) error { return respond(e, e.flags(), args, false) }
