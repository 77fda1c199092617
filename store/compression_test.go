package store

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestRawLinesTakeZstdAndEveryOtherKindTheFastCodec: the tables a flush
// writes compress the raw lines with zstd at level 3 and every kind read a
// record at a time (records, short texts, ids, orders) with Pebble's
// fastest codec (decision 400).
func TestRawLinesTakeZstdAndEveryOtherKindTheFastCodec(t *testing.T) {
	texts := make([]string, 3000)
	for i := range texts {
		texts[i] = fmt.Sprintf("entry %d: the cart is empty when the checkout starts, %s", i, strings.Repeat("again ", i%7))
	}
	st := pushTexts(t, texts)
	if err := st.db.Flush(); err != nil {
		t.Fatal(err)
	}
	levels, err := st.db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	stats := map[byte]string{}
	for _, tables := range levels {
		for _, tb := range tables {
			stats[tb.Smallest.UserKey[0]] += tb.Properties.CompressionStats + ";"
		}
	}
	fast := "MinLZ" // Pebble's fastest codec, but on arm64
	if runtime.GOARCH == "arm64" {
		fast = "Snappy"
	}
	for _, c := range []struct {
		tag       byte
		want, not string
	}{{tagRaw, "ZSTD3", "ZSTD1"}, {tagEntry, fast, "ZSTD"}, {tagText, fast, "ZSTD"}, {tagID, fast, "ZSTD"}} {
		if got := stats[c.tag]; !strings.Contains(got, c.want) || strings.Contains(got, c.not) {
			t.Errorf("tables of %c: blocks %q; want %s, no %s", c.tag, got, c.want, c.not)
		}
	}
}
