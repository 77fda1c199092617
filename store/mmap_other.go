//go:build !unix

package store

import "github.com/cockroachdb/pebble/v2/vfs"

// mapText maps nothing where files cannot be mapped: the text file is read
// with positioned reads.
func mapText(vfs.File, int64) []byte { return nil }

func unmapText([]byte) {}
