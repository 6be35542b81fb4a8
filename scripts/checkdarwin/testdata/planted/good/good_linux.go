package good

func name() string { return "linux" }
