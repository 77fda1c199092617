//go:build linux

package hugepages

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
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
	after := hugeKB(t, uintptr(unsafe.Pointer(&buf[len(buf)/2])))
	if (after < 16<<10 || st.Bytes < int64(len(buf))/2) && st.Busy > 0 {
		t.Skipf("the kernel had no huge pages for part of the memory (%+v), perhaps the buffer's", st)
	}
	if st.Ranges == 0 || st.Bytes < int64(len(buf))/2 || after < 16<<10 {
		t.Fatalf("Collapse = %+v; the buffer's mapping holds %d kB of huge pages after it (%d before); want most of its 32 MB", st, after, before)
	}
}

func TestDenseRunsTakeHugePagesMostlyInMemory(t *testing.T) {
	const per = hugePage / pageSize
	page := func(in int) []byte { // a huge page's vector, in small pages resident
		v := make([]byte, per)
		for i := range in {
			v[i] = 1
		}
		return v
	}
	a := uintptr(0x40000000)
	vec := append(append(append(append(page(per), page(per*7/8)...), page(per*7/8-1)...), page(0)...), page(per)...)
	want := []span{{a, a + 2*hugePage}, {a + 4*hugePage, a + 5*hugePage}}
	if got := denseRuns(a, vec); !reflect.DeepEqual(got, want) {
		t.Fatalf("denseRuns = %#x, want %#x (pages 0-1 whole or 7/8 in memory, 2 one page short, 3 empty, 4 whole)", got, want)
	}
	if n := sumRuns(want); n != 3*hugePage {
		t.Fatalf("sumRuns = %d, want %d", n, 3*hugePage)
	}
}

// TestCollapseLeavesSparseMemoryOut: a mapping of 64 MB with one small
// page touched in each 2 MB stays out of memory: collapsing it would have
// filled every hole.
func TestCollapseLeavesSparseMemoryOut(t *testing.T) {
	m, err := syscall.Mmap(-1, 0, 64<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Skip(err)
	}
	defer syscall.Munmap(m)
	for i := 0; i < len(m); i += hugePage {
		m[i] = 1
	}
	if _, err := Collapse(context.Background()); errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	if kb := smapsKB(t, uintptr(unsafe.Pointer(&m[0])), "Rss:"); kb > 4<<10 {
		t.Fatalf("the sparse mapping holds %d kB after Collapse; want the ~128 kB touched", kb)
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
func hugeKB(t *testing.T, addr uintptr) int { return smapsKB(t, addr, "AnonHugePages:") }

// smapsKB returns the field (such as "Rss:") of the mapping holding addr,
// in kB, from /proc/self/smaps.
func smapsKB(t *testing.T, addr uintptr, field string) int {
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
		if in && strings.HasPrefix(l, field) {
			kb, _ := strconv.Atoi(strings.Fields(l)[1])
			return kb
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return 0
}
