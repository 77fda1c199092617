#include "textflag.h"

// func pairScan(s []byte, from, end, o1, o2, o3 int, b1, b2, b3 byte) int
//
// pairScan returns the first p in [from, end] with s[p+o1] == b1,
// s[p+o2] == b2 and s[p+o3] == b3, or -1. It tests 16 positions at a time
// with SSE2 (every amd64 processor has it): the bytes at p+o1, p+o2 and
// p+o3 are compared with b1, b2 and b3, and the three masks ANDed; where
// the processor has AVX2 (useAVX2), 32 at a time while they fit. The
// caller guarantees that end+oN+16 is at most len(s) for each offset, so
// every load is inside s.
TEXT ·pairScan(SB), NOSPLIT, $0-80
	MOVQ    s_base+0(FP), SI
	MOVQ    from+24(FP), AX
	MOVQ    end+32(FP), DX
	MOVQ    o1+40(FP), R8
	MOVQ    o2+48(FP), R9
	MOVQ    o3+56(FP), R11
	MOVBLZX b1+64(FP), BX
	MOVBLZX b2+65(FP), CX
	MOVBLZX b3+66(FP), R12

	// X1, X2, X5 = b1, b2, b3 in every byte.
	MOVQ       BX, X1
	PUNPCKLBW  X1, X1
	PSHUFLW    $0, X1, X1
	PUNPCKLQDQ X1, X1
	MOVQ       CX, X2
	PUNPCKLBW  X2, X2
	PSHUFLW    $0, X2, X2
	PUNPCKLQDQ X2, X2
	MOVQ       R12, X5
	PUNPCKLBW  X5, X5
	PSHUFLW    $0, X5, X5
	PUNPCKLQDQ X5, X5

	LEAQ (SI)(R8*1), R8   // &s[o1]
	LEAQ (SI)(R9*1), R9   // &s[o2]
	LEAQ (SI)(R11*1), R11 // &s[o3]

	// With AVX2, 32 positions at a time while a 32-byte load from p stays
	// inside what the caller guarantees (p <= end-16); the rest 16 at a
	// time below.
	CMPB ·useAVX2(SB), $1
	JNE  loop
	VPBROADCASTB X1, Y1
	VPBROADCASTB X2, Y2
	VPBROADCASTB X5, Y5
	MOVQ         DX, R13
	SUBQ         $16, R13
wide:
	CMPQ      AX, R13
	JGT       widedone
	VMOVDQU   (R8)(AX*1), Y3
	VMOVDQU   (R9)(AX*1), Y4
	VMOVDQU   (R11)(AX*1), Y6
	VPCMPEQB  Y1, Y3, Y3
	VPCMPEQB  Y2, Y4, Y4
	VPCMPEQB  Y5, Y6, Y6
	VPAND     Y4, Y3, Y3
	VPAND     Y6, Y3, Y3
	VPMOVMSKB Y3, R10
	TESTL     R10, R10
	JNZ       widefound
	ADDQ      $32, AX
	JMP       wide

widefound:
	VZEROUPPER
	JMP found

widedone:
	VZEROUPPER

loop:
	CMPQ     AX, DX
	JGT      none
	MOVOU    (R8)(AX*1), X3
	MOVOU    (R9)(AX*1), X4
	MOVOU    (R11)(AX*1), X6
	PCMPEQB  X1, X3
	PCMPEQB  X2, X4
	PCMPEQB  X5, X6
	PAND     X4, X3
	PAND     X6, X3
	PMOVMSKB X3, R10
	TESTL    R10, R10
	JNZ      found
	ADDQ     $16, AX
	JMP      loop

found:
	BSFL R10, R10
	ADDQ R10, AX
	CMPQ AX, DX
	JGT  none // the first match lies past end
	MOVQ AX, ret+72(FP)
	RET

none:
	MOVQ $-1, ret+72(FP)
	RET
