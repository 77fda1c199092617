package main

import (
	"strconv"
	"testing"
	"time"
)

// TestARestartedServerWaitsBeforeRestartingAgain: a server that replaced
// itself less than restartEvery ago waits out the rest before it does
// again; one that never did, or did long ago, restarts at once.
func TestARestartedServerWaitsBeforeRestartingAgain(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		env  string
		want time.Duration
	}{
		{"", 0},
		{"garbage", 0},
		{strconv.FormatInt(now.Unix(), 10), restartEvery},
		{strconv.FormatInt(now.Add(-20*time.Second).Unix(), 10), restartEvery - 20*time.Second},
		{strconv.FormatInt(now.Add(-restartEvery).Unix(), 10), 0},
		{strconv.FormatInt(now.Add(-time.Hour).Unix(), 10), 0},
	} {
		t.Setenv(restartedEnv, c.env)
		if got := restartDelay(now); got != c.want {
			t.Errorf("%s=%q: wait %v; want %v", restartedEnv, c.env, got, c.want)
		}
	}
}
