package good

/*
#include <unistd.h>
*/
import "C"

import "unsafe"

func name() string {
	var buf [256]C.char
	C.gethostname(&buf[0], C.size_t(len(buf)))
	_ = unsafe.Pointer(&buf[0])
	return "darwin:" + C.GoString(&buf[0])
}
