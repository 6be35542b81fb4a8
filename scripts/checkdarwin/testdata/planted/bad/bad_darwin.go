package bad

/*
#include <stdlib.h>
*/
import "C"

func count() int {
	n := C.int(3)
	var total int = "three" // planted: a string is not an int
	return int(n) + total
}
