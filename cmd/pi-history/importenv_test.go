package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pi-history/pi-history/service"
)

func TestImportSizesFromTheEnvironment(t *testing.T) {
	for name, read := range map[string]func() (int, error){
		"PI_HISTORY_FLUSH_KB": flushBytes,
	} {
		for _, c := range []struct {
			env     string
			want    int
			wantErr bool
		}{
			{"", 0, false},
			{"16", 16 << 10, false},
			{"1048576", 1 << 30, false},
			{"0", 0, true},
			{"-4", 0, true},
			{"2MB", 0, true},
			{"1048577", 0, true},
		} {
			t.Setenv(name, c.env)
			got, err := read()
			if got != c.want || (err != nil) != c.wantErr {
				t.Errorf("%s=%q: %d, %v; want %d, error %v", name, c.env, got, err, c.want, c.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), name) {
				t.Errorf("error %q does not name the variable %s", err, name)
			}
		}
	}
}

// The progress line shows how far the index lags while files are read,
// then the indexing rate and an ETA once it has watched for a second.
func TestImportProgressShowsTheIndexAndItsETA(t *testing.T) {
	var out strings.Builder
	clock := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	l := &importLine{g: &globals{stderr: &out}, now: func() time.Time { return clock }, start: clock}
	step := func(d time.Duration, st service.ImportStatus) string {
		clock = clock.Add(d)
		out.Reset()
		l.show(st)
		return out.String()
	}
	got := step(10*time.Second, service.ImportStatus{FilesDone: 3, Files: 6, Bytes: 50e6, TotalBytes: 100e6,
		Entries: 4000, Through: 1000, Target: 4000})
	for _, want := range []string{"files 3/6", "5.0 MB/s", "50%", "files ETA 10s", "indexed 25%"} {
		if !strings.Contains(got, want) {
			t.Errorf("files line %q lacks %q", got, want)
		}
	}
	got = step(time.Second, service.ImportStatus{Indexing: true, Through: 2000, Target: 4000})
	if !strings.Contains(got, "indexing 2000 of 4000 entries (50%)") || !strings.Contains(got, "ETA ?") {
		t.Errorf("first indexing line %q: want the count and no ETA yet", got)
	}
	got = step(2*time.Second, service.ImportStatus{Indexing: true, Through: 3000, Target: 4000})
	for _, want := range []string{"(75%)", "500 entries/s", "ETA 2s"} {
		if !strings.Contains(got, want) {
			t.Errorf("indexing line %q lacks %q", got, want)
		}
	}
	got = step(time.Second, service.ImportStatus{Compacting: true})
	if !strings.Contains(got, "compacting") {
		t.Errorf("compacting line %q", got)
	}
}

// TestAnInterruptedImportSaysWhatItLeft: Ctrl-C during an import ends it
// with a message saying that what was read is kept and how to go on, not
// with "context canceled" (or, through a server, a transport error).
func TestAnInterruptedImportSaysWhatItLeft(t *testing.T) {
	var out bytes.Buffer
	g := &globals{stderr: &out, stdout: &out}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, runErr := range []error{context.Canceled, errors.New(`Post "http://127.0.0.1:7314/v1/import": interrupt signal received`)} {
		err := importShowing(ctx, g, func(func(service.ImportStatus)) (service.ImportSummary, error) {
			return service.ImportSummary{}, runErr
		})
		if err == nil || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "run the same import again") {
			t.Errorf("after %v: %v", runErr, err)
		}
	}
	// Not interrupted: the error stays what it was.
	err := importShowing(context.Background(), g, func(func(service.ImportStatus)) (service.ImportSummary, error) {
		return service.ImportSummary{}, errors.New("disk full")
	})
	if err == nil || err.Error() != "disk full" {
		t.Errorf("an import that failed on its own: %v", err)
	}
}
