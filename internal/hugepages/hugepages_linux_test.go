//go:build linux

package hugepages

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

func TestParseMappingTakesTheWholeHugePagesOfPrivateAnonymousMappings(t *testing.T) {
	for _, tc := range []struct {
		line   string
		want   span
		wantOK bool
	}{
		{"c000000000-c004000000 rw-p 00000000 00:00 0 ", span{0xc000000000, 0xc004000000}, true},
		{"7f0000001000-7f0000601000 rw-p 00000000 00:00 0", span{0x7f0000200000, 0x7f0000600000}, true},
		{"7f0000001000-7f0000101000 rw-p 00000000 00:00 0", span{}, false},                        // no whole huge page inside
		{"7f0000000000-7f0004000000 r--p 00000000 00:00 0", span{}, false},                        // read-only
		{"7f0000000000-7f0004000000 rw-s 00000000 00:05 1234 /dev/zero (deleted)", span{}, false}, // shared
		{"7f0000000000-7f0004000000 rw-p 00000000 fd:01 4242 /usr/lib/libc.so.6", span{}, false},  // a file's
		{"7ffd00000000-7ffd04000000 rw-p 00000000 00:00 0 [stack]", span{}, false},                // named
		{"zz-yy rw-p 00000000 00:00 0", span{}, false},                                            // not hex
		{"", span{}, false},
	} {
		got, ok := parseMapping(tc.line)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("parseMapping(%q) = %#x, %v; want %#x, %v", tc.line, got, ok, tc.want, tc.wantOK)
		}
	}
}

// TestCollapseMovesMemoryIntoHugePagesUnchanged: a buffer of 32 MB written
// in small pages reads the same after Collapse, and its mapping is in
// huge pages.
func TestCollapseMovesMemoryIntoHugePagesUnchanged(t *testing.T) {
	buf := make([]byte, 32<<20)
	for i := range buf {
		buf[i] = byte(i*7 + i>>12)
	}
	before := hugeKB(t, uintptr(unsafe.Pointer(&buf[len(buf)/2])))
	st, err := Collapse(context.Background())
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		if buf[i] != byte(i*7+i>>12) {
			t.Fatalf("byte %d changed in the collapse", i)
		}
	}
	if st.Ranges == 0 || st.Bytes < int64(len(buf))/2 {
		t.Fatalf("Collapse = %+v: want at least the buffer's 32 MB collapsed", st)
	}
	after := hugeKB(t, uintptr(unsafe.Pointer(&buf[len(buf)/2])))
	if after < 16<<10 && st.Failed > 0 {
		t.Skipf("the kernel collapsed only part of the memory (%+v), perhaps none of the buffer: no free huge pages?", st)
	}
	if after < 16<<10 {
		t.Fatalf("the buffer's mapping holds %d kB of huge pages after Collapse (%d before); want most of its 32 MB", after, before)
	}
}

func TestCollapseStopsWhenItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if st, err := Collapse(ctx); !errors.Is(err, context.Canceled) || st.Bytes != 0 {
		t.Fatalf("Collapse(cancelled) = %+v, %v; want nothing done, context.Canceled", st, err)
	}
}

// hugeKB returns the AnonHugePages of the mapping holding addr, from
// /proc/self/smaps.
func hugeKB(t *testing.T, addr uintptr) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := sc.Text()
		if f := strings.Fields(l); len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			lo, hi, _ := strings.Cut(f[0], "-")
			a, _ := strconv.ParseUint(lo, 16, 64)
			z, _ := strconv.ParseUint(hi, 16, 64)
			in = uint64(addr) >= a && uint64(addr) < z
			continue
		}
		if in && strings.HasPrefix(l, "AnonHugePages:") {
			kb, _ := strconv.Atoi(strings.Fields(l)[1])
			return kb
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return 0
}
