package benchkit

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Memory is a process's resident memory by kind, in bytes, as
// /proc/PID/status gives it.
type Memory struct {
	RSS   int64 // VmRSS: everything resident
	Anon  int64 // RssAnon: anonymous pages (the Go heap, stacks, C allocations, anonymous mappings)
	File  int64 // RssFile: file-backed pages of mapped files (the kernel may drop them)
	Shmem int64 // RssShmem
	Peak  int64 // VmHWM: the highest VmRSS so far
}

// ParseStatus reads the memory lines of a /proc/PID/status file (values in
// kB). A file without VmRSS (a kernel thread, a process gone) is an error.
func ParseStatus(r io.Reader) (Memory, error) {
	var m Memory
	seen := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch key {
		case "VmRSS":
			dst, seen = &m.RSS, true
		case "RssAnon":
			dst = &m.Anon
		case "RssFile":
			dst = &m.File
		case "RssShmem":
			dst = &m.Shmem
		case "VmHWM":
			dst = &m.Peak
		default:
			continue
		}
		f := strings.Fields(val)
		if len(f) == 0 {
			return m, fmt.Errorf("status line %q has no value", sc.Text())
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("status line %q: %w", sc.Text(), err)
		}
		if len(f) > 1 && f[1] != "kB" {
			return m, fmt.Errorf("status line %q: unit %q, want kB", sc.Text(), f[1])
		}
		*dst = n << 10
	}
	if err := sc.Err(); err != nil {
		return m, err
	}
	if !seen {
		return m, fmt.Errorf("no VmRSS line: not a user process, or it has ended")
	}
	return m, nil
}

// ReadMemory reads /proc/PID/status.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	return ParseStatus(bytes.NewReader(b))
}

// RunSampled runs cmd, reading its /proc status every so often until it
// ends: the highest anonymous and file-backed memory seen, and the
// process's own peak RSS (VmHWM) as last read. The peak RSS wait4 reports
// will not do: on Linux a child that Go starts with vfork inherits its
// parent's. Sampling takes CPU from the run; time a run without it.
func RunSampled(cmd *exec.Cmd, every time.Duration) (Memory, error) {
	if err := cmd.Start(); err != nil {
		return Memory{}, err
	}
	var peak Memory
	var done atomic.Bool
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for !done.Load() {
			if m, err := ReadMemory(cmd.Process.Pid); err == nil {
				peak.Anon, peak.File, peak.Peak = max(peak.Anon, m.Anon), max(peak.File, m.File), max(peak.Peak, m.Peak)
			}
			time.Sleep(every)
		}
	}()
	err := cmd.Wait()
	done.Store(true)
	<-sampled
	return peak, err
}

// ParseCPUTicks returns the user plus system CPU time, in clock ticks,
// from the text of a /proc/PID/stat file (fields 14 and 15, counted after
// the command name, which may hold spaces and parentheses).
func ParseCPUTicks(stat string) (int64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat %q: no command name", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime is field 14, stime 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("stat %q: too few fields", stat)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("stat %q: utime or stime is not a number", stat)
	}
	return u + s, nil
}

// CPUTicks reads the CPU time process pid has used, in clock ticks (100 a
// second on Linux).
func CPUTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return ParseCPUTicks(string(b))
}

// MB formats bytes as whole megabytes (2^20).
func MB(b int64) string { return strconv.FormatInt((b+(1<<19))>>20, 10) }
