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
)

const (
	hugePage = 2 << 20
	// step is how much one madvise call collapses: ctx is checked
	// between steps, and concurrent faults in the range wait less.
	step = 64 << 20
	// madvCollapse is MADV_COLLAPSE (not in package syscall).
	madvCollapse = 25
)

// Collapse asks the kernel to move the process's private anonymous memory
// (the Go heap and what the runtime maps beside it) into huge pages, 64 MB
// at a time, until ctx ends. Only whole 2 MB pages inside each mapping are
// asked for. Memory the kernel does not collapse (a mapping marked for
// small pages, pages in use by I/O, no free huge page) is counted in
// Stats.Failed and left as it was; ErrUnsupported when it collapsed
// nothing and refused some as invalid (a kernel without MADV_COLLAPSE). It takes
// seconds for gigabytes (6-12 s for 3.8 GB on the benchmark's machine);
// what it moves is unchanged.
func Collapse(ctx context.Context) (Stats, error) {
	var st Stats
	ranges, err := anonymous()
	if err != nil {
		return st, err
	}
	invalid := 0 // calls refused with EINVAL
	for _, r := range ranges {
		st.Ranges++
		for a := r.lo; a < r.hi; a += step {
			if err := ctx.Err(); err != nil {
				return st, err
			}
			n := min(step, r.hi-a)
			_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, a, n, madvCollapse)
			if errno == 0 {
				st.Bytes += int64(n)
				continue
			}
			// EINVAL: a mapping marked for small pages (the runtime
			// marks some), or a kernel without MADV_COLLAPSE; EAGAIN,
			// ENOMEM, EBUSY: pages busy or no huge page free. The part
			// stays as it was.
			st.Failed += int64(n)
			if errno == syscall.EINVAL {
				invalid++
			}
		}
	}
	if st.Bytes == 0 && invalid > 0 {
		return st, ErrUnsupported
	}
	return st, nil
}

// span is the whole huge pages [lo, hi) inside one mapping.
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
