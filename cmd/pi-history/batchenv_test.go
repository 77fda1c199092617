package main

import (
	"strings"
	"testing"
)

func TestIndexBatchSizeFromTheEnvironment(t *testing.T) {
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
		t.Setenv("PI_HISTORY_INDEX_BATCH_KB", c.env)
		got, err := indexBatchBytes()
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("PI_HISTORY_INDEX_BATCH_KB=%q: %d, %v; want %d, error %v", c.env, got, err, c.want, c.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "PI_HISTORY_INDEX_BATCH_KB") {
			t.Errorf("error %q does not name the variable", err)
		}
	}
}
