// cpuRelax: one PAUSE, the x86 spin-wait hint sl-bench's C contenders use
// (slb_cpu_relax); Go has no intrinsic for it.
#include "textflag.h"

TEXT ·cpuRelax(SB), NOSPLIT, $0-0
	PAUSE
	RET
