//go:build linux

package hugepages

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

const (
	hugePage = 2 << 20
	// step is how much memory is looked at (mincore) and collapsed at a
	// time, one madvise call a run of dense huge pages: ctx is checked
	// between steps, and concurrent faults in the range wait less.
	step = 64 << 20
	// madvCollapse is MADV_COLLAPSE (not in package syscall).
	madvCollapse = 25
)

// Collapse asks the kernel to move the process's private anonymous memory
// (the Go heap and what the runtime maps beside it) into huge pages, until
// ctx ends. Only whole 2 MB pages inside each mapping are asked for, and
// only those of which at least seven eighths are in memory already: the
// kernel fills a collapsed page's holes, and the runtime's mappings hold
// much that is reserved but never touched, or given back (the race
// detector's shadow memory, the heap's scavenged pages), which a collapse
// would bring into memory. Memory the kernel does not collapse (a mapping
// marked for small pages, pages in use by I/O, no free huge page) is
// counted in Stats.Refused or Stats.Busy and left as it was; the error is
// ErrUnsupported when it collapsed nothing and refused some as invalid (a
// kernel without MADV_COLLAPSE). It takes seconds for gigabytes (5.5-12 s
// for 3.8 GB on the benchmark's machine); what it moves is unchanged.
func Collapse(ctx context.Context) (Stats, error) {
	var st Stats
	ranges, err := anonymous()
	if err != nil {
		return st, err
	}
	vec := make([]byte, step/pageSize)
	for _, r := range ranges {
		st.Ranges++
		for a := r.lo; a < r.hi; a += step {
			if err := ctx.Err(); err != nil {
				return st, err
			}
			n := min(step, r.hi-a)
			if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, a, n, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
				st.Sparse += int64(n) // not known to be in memory: left alone
				continue
			}
			runs := denseRuns(a, vec[:n/pageSize])
			for _, run := range runs {
				_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, run.lo, run.hi-run.lo, madvCollapse)
				if errno == 0 {
					st.Bytes += int64(run.hi - run.lo)
					continue
				}
				// EINVAL: a mapping marked for small pages (the
				// runtime marks some), or a kernel without
				// MADV_COLLAPSE; EAGAIN, ENOMEM, EBUSY: pages busy or
				// no huge page free. The run stays as it was.
				if errno == syscall.EINVAL {
					st.Refused += int64(run.hi - run.lo)
				} else {
					st.Busy += int64(run.hi - run.lo)
				}
			}
			st.Sparse += int64(n) - sumRuns(runs)
		}
	}
	if st.Bytes == 0 && st.Refused > 0 {
		return st, ErrUnsupported
	}
	return st, nil
}

// pageSize is the small page mincore reports on.
const pageSize = 4096

// denseRuns returns the runs of consecutive huge pages from a (a huge
// page's start) of which at least seven eighths of the small pages are in
// memory, given mincore's vector for the small pages from a on.
func denseRuns(a uintptr, resident []byte) []span {
	const per = hugePage / pageSize
	var out []span
	for k := 0; k+per <= len(resident); k += per {
		in := 0
		for _, v := range resident[k : k+per] {
			in += int(v & 1)
		}
		if in < per*7/8 {
			continue
		}
		lo := a + uintptr(k)*pageSize
		if m := len(out); m > 0 && out[m-1].hi == lo {
			out[m-1].hi = lo + hugePage
		} else {
			out = append(out, span{lo, lo + hugePage})
		}
	}
	return out
}

// sumRuns is the bytes runs cover.
func sumRuns(runs []span) int64 {
	var n int64
	for _, r := range runs {
		n += int64(r.hi - r.lo)
	}
	return n
}

// span is a run of whole huge pages [lo, hi): those inside one mapping,
// or a run of them dense enough to collapse (see denseRuns).
type span struct{ lo, hi uintptr }

// anonymous returns the whole huge pages inside each private, writable,
// anonymous mapping of the process, from /proc/self/maps.
func anonymous() ([]span, error) {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil, fmt.Errorf("read the process's mappings: %w", err)
	}
	var out []span
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if s, ok := parseMapping(sc.Text()); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// parseMapping reads one line of /proc/self/maps ("lo-hi perms offset
// dev inode [path]") and returns the whole huge pages inside it when the
// mapping is private, readable, writable and anonymous (no path, inode 0).
func parseMapping(line string) (span, bool) {
	f := bytes.Fields([]byte(line))
	if len(f) != 5 || string(f[4]) != "0" || !bytes.HasPrefix(f[1], []byte("rw")) || len(f[1]) < 4 || f[1][3] != 'p' {
		return span{}, false
	}
	lo, hi, ok := bytes.Cut(f[0], []byte("-"))
	if !ok {
		return span{}, false
	}
	a, err1 := strconv.ParseUint(string(lo), 16, 64)
	z, err2 := strconv.ParseUint(string(hi), 16, 64)
	if errors.Join(err1, err2) != nil {
		return span{}, false
	}
	first, last := uintptr(a+hugePage-1)&^(hugePage-1), uintptr(z)&^(hugePage-1)
	if last <= first {
		return span{}, false
	}
	return span{first, last}, true
}
