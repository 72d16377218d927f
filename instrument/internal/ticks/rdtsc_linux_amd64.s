#include "textflag.h"

// func rdtsc() int64
//
// RDTSC without a fence: the read may move a few cycles against the instructions around it,
// nothing against calls that take microseconds, and it costs markedly less than the runtime's
// serialising RDTSCP on virtual machines.
TEXT ·rdtsc(SB), NOSPLIT, $0-8
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET
